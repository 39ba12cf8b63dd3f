import Foundation

/// Runs a program to completion (bounded): its exit status and what it printed (stdout, and
/// stderr unless kept apart). A program still running at the deadline is terminated. `environment`
/// is added to this process's.
func runChildProcess(_ executable: URL, _ arguments: [String], timeout: TimeInterval,
                     includeStandardError: Bool = true,
                     environment: [String: String] = [:]) throws -> (status: Int32, output: String, timedOut: Bool) {
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    if !environment.isEmpty {
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    }
    let out = Pipe()
    process.standardOutput = out
    if includeStandardError { process.standardError = out }
    try process.run()
    // Drain while it runs, so a chatty child never blocks on a full pipe.
    let collected = OutputBuffer()
    out.fileHandleForReading.readabilityHandler = { handle in collected.append(handle.availableData) }
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
    let timedOut = process.isRunning
    if timedOut {
        process.terminate()
        process.waitUntilExit()
    }
    out.fileHandleForReading.readabilityHandler = nil
    collected.append(out.fileHandleForReading.readDataToEndOfFile())
    return (process.terminationStatus, collected.text, timedOut)
}

private final class OutputBuffer: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()
    func append(_ more: Data) { lock.lock(); data.append(more); lock.unlock() }
    var text: String { lock.lock(); defer { lock.unlock() }; return String(decoding: data, as: UTF8.self) }
}
