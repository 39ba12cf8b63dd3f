import CJavaScriptCoreAPI
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Bounds each call of a sandbox in time and memory. JSC's execution time limit calls back every
/// `tick` seconds of script execution; the callback stops the script once the call has run past
/// the time limit or the process's resident memory has grown past the memory limit since it began.
// @unchecked because its per-call fields are set by `begin` and read by JSC's callback on that same thread while the script runs.
final class Watchdog: @unchecked Sendable {
    /// How often a running script is checked (JSC rounds it to its own timer granularity).
    static let tick = 0.05

    let jsc: cjsc_api
    let group: JSContextGroupRef
    let limits: CBLJSLimits
    // Set by `begin` on the calling thread, read by the callback, which JSC runs on that thread
    // while it executes the script.
    private var start: TimeInterval = 0
    private var startResident = 0
    private var reason: String?

    init(jsc: cjsc_api, group: JSContextGroupRef, limits: CBLJSLimits) {
        self.jsc = jsc
        self.group = group
        self.limits = limits
    }

    private var residentReadAt: TimeInterval = -1

    func begin() {
        start = ProcessInfo.processInfo.systemUptime
        // Reading /proc costs more than a typical map call: the baseline is refreshed at most
        // every tick (growth within a tick of calls stays far below any useful limit).
        if start - residentReadAt > Self.tick {
            startResident = Self.residentBytes()
            residentReadAt = start
        }
        reason = nil
    }

    /// Ends a call: the reason the watchdog stopped it, if it did.
    func end() -> String? {
        defer { reason = nil }
        return reason
    }

    /// True to stop the script.
    fileprivate func shouldTerminate() -> Bool {
        let elapsed = ProcessInfo.processInfo.systemUptime - start
        if elapsed > limits.timeLimit {
            reason = "the function ran longer than its time limit (\(Self.seconds(limits.timeLimit)))"
            return true
        }
        let grown = Self.residentBytes() - startResident
        if grown > limits.memoryLimit {
            reason = "the function used more memory than its limit (\(limits.memoryLimit >> 20) MiB)"
            return true
        }
        // The watchdog fires once per arming: arm it again for the next tick.
        jsc.JSContextGroupSetExecutionTimeLimit(group, Self.tick, watchdogCallback, Unmanaged.passUnretained(self).toOpaque())
        return false
    }

    private static func seconds(_ t: TimeInterval) -> String {
        t == t.rounded() ? "\(Int(t)) s" : "\(t) s"
    }

    /// The process's resident set size (`/proc/self/statm`, second field, in pages).
    static func residentBytes() -> Int {
        let fd = open("/proc/self/statm", O_RDONLY)
        guard fd >= 0 else { return 0 }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 128)
        let n = read(fd, &buffer, buffer.count)
        guard n > 0 else { return 0 }
        let fields = buffer[..<n].split(separator: UInt8(ascii: " "))
        guard fields.count > 1, let pages = Int(String(decoding: fields[1], as: UTF8.self)) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}

/// JSC's should-terminate callback: `info` is the unretained ``Watchdog``.
nonisolated(unsafe) let watchdogCallback: JSShouldTerminateCallback = { _, info in
    guard let info else { return true }
    return Unmanaged<Watchdog>.fromOpaque(info).takeUnretainedValue().shouldTerminate()
}
