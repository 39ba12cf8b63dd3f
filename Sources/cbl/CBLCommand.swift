import ArgumentParser
import CouchbaseLite
import CouchbaseLiteListener
import Foundation

@main
struct CBLCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cbl",
        abstract: "Couchbase Lite 1.x databases on Linux: try them out and inspect them.",
        version: CBLVersion(),
        subcommands: [Demo.self, Info.self, Serve.self, Upgrade.self, Replicate.self, Compare.self],
        defaultSubcommand: Demo.self
    )
}

/// Opens `NAME.cblite2` at a path through a manager on its parent directory.
func openDatabase(at path: String, readOnly: Bool) throws -> (CBLManager, CBLDatabase) {
    let url = URL(fileURLWithPath: path).standardizedFileURL
    guard url.pathExtension == "cblite2" else {
        throw ValidationError("\(path) is not a .cblite2 database directory")
    }
    let name = url.deletingPathExtension().lastPathComponent.replacingOccurrences(of: ":", with: "/")
    var options = CBLManagerOptions(readOnly: readOnly, fileProtection: [])
    let manager = try CBLManager(directory: url.deletingLastPathComponent().path, options: &options)
    return (manager, try manager.existingDatabaseNamed(name))
}

func jsonString(_ value: Any) -> String {
    guard let data = try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed]) else {
        return "\(value)"
    }
    return String(decoding: data, as: UTF8.self)
}

struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create a database, write a document with an attachment, read it back and print it.")

    @Option(help: "Manager directory (default: a new temporary directory).")
    var directory: String?

    func run() throws {
        let dir = directory ?? FileManager.default.temporaryDirectory
            .appendingPathComponent("cbl-demo-\(UUID().uuidString)").path
        let manager = try CBLManager(directory: dir)
        defer { manager.close() }
        let db = try manager.databaseNamed("demo")
        let doc = db.document(withID: "hello")!
        try doc.update { rev in
            rev["greeting"] = "Hello from Couchbase Lite 1.x on Linux"
            rev["count"] = (rev["count"] as? Int ?? 0) + 1
            rev.setAttachmentNamed("note.txt", withContentType: "text/plain", content: Data("attached text".utf8))
            return true
        }
        let reread = try manager.existingDatabaseNamed("demo").existingDocument(withID: "hello")!
        print("database:   \(db.directoryURL.path)")
        print("documents:  \(db.documentCount), last sequence \(db.lastSequenceNumber)")
        print("document:   \(reread.documentID) rev \(reread.currentRevisionID ?? "-")")
        print("properties: \(jsonString(reread.userProperties ?? [:]))")
        if let attachment = reread.currentRevision?.attachmentNamed("note.txt") {
            print("attachment: \(attachment.name) \(attachment.contentType ?? "") \(attachment.length) bytes: "
                  + String(decoding: attachment.content ?? Data(), as: UTF8.self))
        }
    }
}

struct Info: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Summarise a 1.x or 2.x/3.x .cblite2 database (opened read-only).")

    @Argument(help: "Path to NAME.cblite2")
    var path: String

    func run() throws {
        let bundle = URL(fileURLWithPath: path).standardizedFileURL
        if let summary = try twoXSummary(bundle) {
            print(summary)
            return
        }
        let (manager, db) = try openDatabase(at: path, readOnly: true)
        defer { manager.close() }
        print("name:            \(db.name)")
        print("documents:       \(db.documentCount)")
        print("last sequence:   \(db.lastSequenceNumber)")
        print("max rev depth:   \(db.maxRevTreeDepth)")
        print("public UUID:     \(db.publicUUID ?? "-")")
    }
}

struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve the databases of a directory over CouchDB's REST API (1.x CBLListener) until interrupted.")

    @Option(help: "TCP port (0 picks a free one).")
    var port: UInt16 = 5984

    @Option(help: "Manager directory holding the NAME.cblite2 databases.")
    var directory: String = CBLManager.defaultDirectory()

    @Option(help: "Interface to listen on (0.0.0.0 for every interface).")
    var host: String = "127.0.0.1"

    @Flag(help: "Refuse every request that would change a database.")
    var readonly = false

    @Option(help: "Require HTTP Basic authentication as USER:PASSWORD.")
    var credentials: String?

    @Flag(help: "Serve HTTPS with a self-signed certificate kept in the directory (printed at start).")
    var ssl = false

    @Option(help: "Largest request body accepted, in bytes (larger ones get 413).")
    var maxBodySize: Int = 64 * 1024 * 1024

    func run() throws {
        var options = CBLManagerOptions(readOnly: readonly, fileProtection: [])
        let manager = try CBLManager(directory: directory, options: &options)
        let listener = CBLListener(manager: manager, port: port)
        listener.bindAddress = host
        listener.readOnly = readonly
        listener.maxBodySize = maxBodySize
        if let credentials {
            guard let colon = credentials.firstIndex(of: ":") else {
                throw ValidationError("--credentials must be USER:PASSWORD")
            }
            listener.setPasswords([String(credentials[..<colon]): String(credentials[credentials.index(after: colon)...])])
        }
        if ssl {
            try listener.setAnonymousSSLIdentity(label: "cbl serve")
        }
        try listener.start()
        if ssl, let pem = listener.sslCertificatePEM { print(pem.trimmingCharacters(in: .whitespacesAndNewlines)) }
        print("Serving \(manager.directory) at \(listener.url?.absoluteString ?? "port \(listener.port)")\(readonly ? " (read-only)" : "")")
        print("Press Ctrl-C to stop.")
        fflush(nil)

        // Run until SIGINT or SIGTERM, then stop cleanly.
        let stopped = DispatchSemaphore(value: 0)
        var sources: [DispatchSourceSignal] = []
        for sig in [SIGINT, SIGTERM] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { stopped.signal() }
            source.resume()
            sources.append(source)
        }
        stopped.wait()
        print("Stopping.")
        listener.stop()
        manager.close()
        sources.forEach { $0.cancel() }
    }
}
