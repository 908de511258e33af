import Foundation
import PrefetchCore

MemoryTuning.apply()
let environment = ProcessInfo.processInfo.environment
exit(Prefetch.main(Array(CommandLine.arguments.dropFirst()), environment: environment,
                   console: .standard(environment: environment)))
