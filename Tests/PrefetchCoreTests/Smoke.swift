import Testing
@testable import PrefetchCore
