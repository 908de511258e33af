import Foundation

/// A daemon pass while its `RestCheck` holds (nothing written to state.db, no folder of the
/// cache changed, the clock before the plan's next change): a full pass would plan the same
/// rows, transfer and collect nothing, remove no feed (a removed feed's grace end is one of
/// the check's times) and leave every index alone, so this one does only what every pass owes
/// besides: the probes are read afresh (SPEC §7: conditions re-checked at least once a
/// minute) and the metrics file, when there is one, is replaced (SPEC §6: every pass).
enum RestingPass {
    static func run(_ rest: RestCheck, feeds: [Feed], settings: Settings, cache: CacheFolder, state: StateStore, console: Console,
                    monitor: ConditionMonitor, sources: [SourceStatus]) -> RunPass.Outcome {
        let started = Date()
        monitor.beginPass()
        defer { monitor.endPass(keepPolling: false) }
        var metricsError: String?
        if let metricsFile = settings.metricsFile {
            metricsError = MetricsWriter.write(to: metricsFile, feeds: feeds, cache: cache, state: state, settings: settings, now: settings.now(),
                                               conditions: settings.assumptions.applied(to: monitor.snapshot()),
                                               passSeconds: Date().timeIntervalSince(started), sources: sources, console: console)
        }
        return RunPass.Outcome(exit: metricsError == nil ? .success : .failure, wakeup: DaemonWakeup.PassTimes(plan: rest.wakeup),
                               metricsError: metricsError, wake: rest.wake, rest: rest)
    }
}
