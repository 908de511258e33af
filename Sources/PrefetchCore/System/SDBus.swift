internal import CShims
import Foundation

/// libsystemd's sd-bus, loaded with `dlopen` on first use and kept (`CShims_sdbus_load`):
/// only a process that finds a system bus to talk to loads it and its dependencies.
final class SDBus: @unchecked Sendable {
    /// The calls, looked up once; immutable after loading.
    let api: CShims_sdbus

    private init(api: CShims_sdbus) {
        self.api = api
    }

    /// The library, or why it cannot be had (loaded at most once per process).
    static var shared: Result<SDBus, BusFailure> { loaded }

    private static let loaded: Result<SDBus, BusFailure> = {
        var error = [CChar](repeating: 0, count: 512)
        guard let table = CShims_sdbus_load(&error, error.count) else {
            return .failure(BusFailure("cannot load sd-bus: " + String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)))
        }
        return .success(SDBus(api: table.pointee))
    }()
}

/// Why a conversation with the bus failed: the words a probe's *unknown* reading carries.
struct BusFailure: Error, Sendable, Equatable, CustomStringConvertible {
    let description: String
    /// True when it was the deadline that ended it (nothing answered in time).
    var timedOut = false
    /// True when the bus itself works and only the service failed (not running, hung, an
    /// error reply): the connection can be kept and asked again.
    var serviceOnly = false

    init(_ description: String, timedOut: Bool = false, serviceOnly: Bool = false) {
        self.description = description
        self.timedOut = timedOut
        self.serviceOnly = serviceOnly
    }

    /// An sd-bus call's negative errno, in the C library's words.
    static func errno(_ call: String, _ code: Int32) -> BusFailure {
        BusFailure("\(call): \(String(cString: strerror(-code)))")
    }
}
