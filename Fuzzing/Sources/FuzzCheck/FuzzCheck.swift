import CLibFuzzer
import Glibc

/// A property every fuzz target checks: when it does not hold the input found a wrong
/// answer, and the process stops as for a crash (libFuzzer keeps the input as `crash-…`).
public func require(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
                    file: StaticString = #fileID, line: UInt = #line) {
    if !condition() { fatalError("property failed: \(message())", file: file, line: line) }
}

/// The fuzzer's bytes as an array (the parsers take `[UInt8]` or `String`).
public func bytes(_ data: UnsafePointer<UInt8>?, _ size: Int) -> [UInt8] {
    guard let data, size > 0 else { return [] }
    return Array(UnsafeBufferPointer(start: data, count: size))
}

/// Runs libFuzzer with the process's arguments over `test` (a target's
/// `LLVMFuzzerTestOneInput`), and exits with its status.
public func runFuzzer(_ test: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> Never {
    var argc = CommandLine.argc
    var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
    exit(LLVMFuzzerRunDriver(&argc, &argv, test))
}
