import Foundation

/// Reads a child process's stdout and stderr pipes to EOF on two threads, so a chatty child
/// never blocks on a full pipe; ``wait(seconds:)`` then gives what each pipe carried.
public final class PipeCollector: @unchecked Sendable {
    // @unchecked because `out` and `err` are only touched under `lock`.
    private let lock = NSLock()
    private var out = Data()
    private var err = Data()
    private let done = DispatchGroup()

    /// Starts reading `stdout` and `stderr` (call before running the process).
    public init(stdout: Pipe, stderr: Pipe) {
        for (pipe, isOut) in [(stdout, true), (stderr, false)] {
            done.enter()
            let handle = pipe.fileHandleForReading
            Thread.detachNewThread { [self] in
                while true {
                    let chunk = handle.availableData
                    if chunk.isEmpty { break }
                    lock.lock()
                    if isOut { out.append(chunk) } else { err.append(chunk) }
                    lock.unlock()
                }
                done.leave()
            }
        }
    }

    /// Waits until both pipes reached EOF (the child is gone); false if that took over `seconds`.
    public func wait(seconds: Double) -> Bool {
        done.wait(timeout: .now() + seconds) == .success
    }

    /// What stdout carried so far.
    public var stdout: Data { lock.lock(); defer { lock.unlock() }; return out }
    /// What stderr carried so far.
    public var stderr: Data { lock.lock(); defer { lock.unlock() }; return err }
}
