import CBLTestSupport
import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// A tmpfs of a few megabytes mounted for one test under the temporary directory, so that writes
/// meet ENOSPC quickly; skipped (XCTSkip) without root or when the mount is refused. A filler file
/// takes part of it so the test can free space by deleting it.
final class SmallFilesystem {
    /// The mount point.
    let url: URL
    private var mounted = false

    init(megabytes: Int) throws {
        guard geteuid() == 0 else { throw XCTSkip("mounting a tmpfs needs root") }
        url = FileManager.default.temporaryDirectory.appendingPathComponent("cbl-diskfull-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        let (status, output) = Self.run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(megabytes)m", "tmpfs", url.path])
        guard status == 0 else {
            try? FileManager.default.removeItem(at: url)
            throw XCTSkip("cannot mount a \(megabytes) MB tmpfs: \(output)")
        }
        mounted = true
    }

    deinit { remove() }

    /// Unmounts (lazily when still busy) and removes the mount point. Safe to call twice.
    func remove() {
        guard mounted else { return }
        mounted = false
        if Self.run("/bin/umount", [url.path]).status != 0 {
            _ = Self.run("/bin/umount", ["-l", url.path])
        }
        rmdir(url.path)
    }

    /// A directory inside the filesystem (created).
    func directory(_ name: String) throws -> URL {
        let dir = url.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    /// Writes a file of `megabytes` that `freeFiller()` deletes.
    func addFiller(megabytes: Int) throws {
        let path = fillerURL.path
        guard FileManager.default.createFile(atPath: path, contents: nil) else {
            throw HTTPClientError(description: "cannot create \(path)")
        }
        let handle = try FileHandle(forWritingTo: fillerURL)
        defer { try? handle.close() }
        let chunk = Data(repeating: 0xA5, count: 1 << 20)
        for _ in 0..<megabytes { try handle.write(contentsOf: chunk) }
    }

    /// Deletes the filler file: space for writing to resume.
    func freeFiller() throws { try FileManager.default.removeItem(at: fillerURL) }

    private var fillerURL: URL { url.appendingPathComponent("filler.bin") }

    /// Bytes free, as statvfs reports them.
    var freeBytes: Int {
        var info = statvfs()
        guard statvfs(url.path, &info) == 0 else { return -1 }
        return Int(info.f_bavail) * Int(info.f_frsize)
    }

    static func run(_ tool: String, _ arguments: [String]) -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        do { try process.run() } catch { return (-1, "\(error)") }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
