import Foundation
import FuzzCheck
import PrefetchCore

/// The minisign verifier (Signatures/). The first byte picks what the rest is: even, a
/// `.minisig` file checked against the signed manifest of Tests/PrefetchCoreTests/Fixtures/
/// minisign and its key (with a second key listed, as in a rotation); odd, a public key
/// string. Nothing traps; a signature file verifies only when its three signed lines are
/// those minisign wrote (the untrusted comment may be anything), and then says what the
/// real file says; a key string parses only when it is the canonical base64 of `Ed`, its
/// key id and its key.
func fuzzMinisig(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = bytes(data, size)
    guard let selector = input.first else { return 0 }
    let rest = Array(input.dropFirst())
    if selector & 1 == 1 {
        let text = String(decoding: rest, as: UTF8.self)
        guard let key = try? MinisignPublicKey(parsing: text) else { return 0 }
        require(key.keyID.count == 8 && key.keyIDHex.count == 16, "key id of \(text.debugDescription)")
        require(Array(text.utf8) == rest && text.utf8.count == 56 && text.hasPrefix("RW"), "key \(text.debugDescription) accepted")
        return 0
    }
    let result = Result { () throws(SignatureError) in try MinisignVerifier.verify(message: manifest, signatureFile: rest, keys: keys) }
    switch result {
    case .failure(let error):
        require(!error.message.isEmpty && !error.message.contains("\n"), "an error without words, or on two lines: \(error)")
    case .success(let verified):
        let signed = signedLines(rest)
        let matches = signed == signedLines(Array(fixtures[0].utf8)) || signed == signedLines(Array(fixtures[1].utf8))
        require(matches, "verified with other signed lines: \(String(decoding: rest, as: UTF8.self).debugDescription)")
        require(verified.keyIDHex == keys[0].keyIDHex && verified.timestamp == 1_764_633_600, "verified as \(verified)")
    }
    return 0
}

/// Lines 2 to 4 of a signature file, line ends left out.
private func signedLines(_ bytes: [UInt8]) -> [[UInt8]] {
    let lines = bytes.split(separator: 0x0a, omittingEmptySubsequences: false).map { line in line.last == 0x0d ? Array(line.dropLast()) : Array(line) }
    return Array(lines.dropFirst().prefix(3))
}

private let manifest = Array("""
name: lobby
resources:
  - url: https://cms.example.com/lobby/loop.mp4
    sha256: 5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03

""".utf8)

private let keys = [try! MinisignPublicKey(parsing: "RWTm0l/pL5lOJIHgYV0bMjX6aMgYEwwcAUwY+aKSpNh/O3uUSGH6C+UH"),
                    try! MinisignPublicKey(parsing: "RWTXru/ZSnG4coAGe1x/+bygaWt0TjGgA7/gpOD1fmADHJOD5puRGmvR")]

/// The fixture's two signatures: `ED` (minisign 0.11's default) and the legacy `Ed`.
let fixtures = ["""
untrusted comment: signature from minisign secret key
RUTm0l/pL5lOJDw8q+Ff6wiiR9bPffZxkOkLlOtc1x2DP66p30UMF8fVpIlwMCrmWAb/rDuzS/MPkK3I4drv9sLDBs0xewMJVwA=
trusted comment: timestamp:1764633600\tfeed:lobby
TPPg9nS6mYIRIB5GK60HQnPN00CdCANtepcI5TnYPWIbrjnS4Zl+KUcBC4xB6X+FTkQBGa7PUKZuIL59UXhABw==
""", """
untrusted comment: signature from minisign secret key
RWTm0l/pL5lOJAMF59fvvxoiC/uY5a2Pf3J8EBq4mQEUmF4Sns2qn/TNwg0CYs5GPrwq3tT0BADWZ2OnF8+ephwYIRa4itQ6RAc=
trusted comment: timestamp:1764633600\tfeed:lobby\tlegacy
/EzC7soceD483YcocmoDg5EcAOi4JLDsSZbI8owxx15IY1n7fbS6rzcRTCjvj4FAelWEMKgVlPxwrFUZoEVyAw==

"""]
