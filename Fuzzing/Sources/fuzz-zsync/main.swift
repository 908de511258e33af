import FuzzCheck

// libFuzzer's entry point, for its own main() and for the driver that runs here.
@_cdecl("LLVMFuzzerTestOneInput")
func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt { fuzzZsync(data, size) }

runFuzzer(testOneInput)
