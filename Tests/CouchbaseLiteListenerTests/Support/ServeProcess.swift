import CBLTestSupport
import Foundation
import XCTest

/// `cbl serve` run as a separate process by the command-line tests: started on a free port over
/// `directory/dbs`, its URL read from the "Serving …" line it prints, stopped with SIGINT.
enum ServeProcess {
    /// Starts `cbl serve` with `extra` options (and `environment` added to this process's); returns
    /// the process, the URL it serves and its log file.
    static func start(_ extra: [String], directory: URL,
                      environment: [String: String] = [:]) throws -> (process: Process, url: URL, log: URL) {
        guard let cbl = BuiltExecutable.find("cbl") else { throw XCTSkip("cbl executable not found; build with `swift build --build-tests`") }
        let log = directory.appendingPathComponent("serve-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let process = Process()
        process.executableURL = cbl
        process.arguments = ["serve", "--port", "0", "--directory", directory.appendingPathComponent("dbs").path] + extra
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let handle = try FileHandle(forWritingTo: log)
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("Serving ") }),
               let range = line.range(of: "http://"),
               let url = URL(string: String(line[range.lowerBound...].split(separator: " ").first ?? "")) {
                return (process, url, log)
            }
            if !process.isRunning { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        if process.isRunning { process.terminate() }
        XCTFail("cbl serve did not report its URL: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
        throw XCTSkip("cannot continue")
    }

    /// Interrupts the server and waits up to 10 s; its exit status, or nil when it had to be terminated.
    static func stop(_ process: Process) -> Int32? {
        process.interrupt()
        let deadline = Date().addingTimeInterval(10)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        if process.isRunning { process.terminate(); return nil }
        return process.terminationStatus
    }
}
