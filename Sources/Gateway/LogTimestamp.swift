/// The `ts` field of every log line the gateway writes (access lines and lifecycle events on
/// standard error alike): UTC, ISO 8601 with milliseconds, `2026-11-29T13:50:00.123Z`.
public enum LogTimestamp {
    /// The time now, from the system clock.
    public static func now() -> String { AccessLog.timestamp(GatewayClock.system.now()) }
}
