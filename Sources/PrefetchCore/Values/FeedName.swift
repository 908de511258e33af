/// Feed names: `[a-z0-9][a-z0-9._-]{0,63}`, used as the feed's folder in the cache.
public enum FeedName {
    /// Nil when `text` is a valid feed name, else why not.
    public static func problem(_ text: String) -> ValueError? {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty else { return ValueError("a feed name cannot be empty") }
        guard bytes.count <= 64 else { return ValueError("a feed name has at most 64 characters", at: text.characterOffset(ofUTF8: 64)) }
        for (index, byte) in bytes.enumerated() {
            let lowerOrDigit = (byte >= 97 && byte <= 122) || (byte >= 48 && byte <= 57)
            let punctuation = byte == 46 || byte == 95 || byte == 45
            if index == 0 && !lowerOrDigit {
                return ValueError("a feed name starts with a lowercase letter or digit", at: 0)
            }
            if !lowerOrDigit && !punctuation {
                return ValueError("a feed name has only lowercase letters, digits, '.', '_' and '-'", at: text.characterOffset(ofUTF8: index))
            }
        }
        return nil
    }
}
