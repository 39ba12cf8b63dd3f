import ArgumentParser
import CouchbaseLite
import CouchbaseLiteJavaScript
import CouchbaseLiteListener
import Foundation

@main
struct CBLCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cbl",
        abstract: "Couchbase Lite databases on Linux: inspect, query, check, convert and replicate them.",
        discussion: """
            Every command that reads a database takes the NAME.cblite2 directory and recognises \
            its format (1.x SQLite storage, or 2.x/3.x) from the file itself.

            EXIT STATUS: 0 success; 1 the command ran but found a problem (check, replicate); \
            2 usage or input error (bad option, bad path, wrong format, no such view, malformed \
            query), reported as one line "cbl <command>: error: …" on standard error.
            """,
        version: CBLVersion(),
        subcommands: [Demo.self, Info.self, Dump.self, ViewQuery.self, N1QL.self, Compare.self, MigratePlan.self, Compact.self, Check.self,
                      Serve.self, Upgrade.self, Replicate.self, Doctor.self],
        defaultSubcommand: Demo.self
    )
}

struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create a database, write a document with an attachment, read it back and print it.",
        discussion: """
            The default command: `cbl` alone runs it in a new temporary directory.

            EXAMPLES:
              cbl demo
              cbl demo --directory /tmp/cbl-demo && cbl info /tmp/cbl-demo/demo.cblite2
            """)

    @Option(help: "Manager directory (default: a new temporary directory).")
    var directory: String?

    func run() throws {
        let dir = directory ?? FileManager.default.temporaryDirectory
            .appendingPathComponent("cbl-demo-\(UUID().uuidString)").path
        let manager = try CBLManager(directory: dir)
        defer { manager.close() }
        let db = try manager.databaseNamed("demo")
        guard let doc = db.document(withID: "hello") else { throw CommandFailure("cannot make document 'hello'") }
        try doc.update { rev in
            rev["greeting"] = "Hello from Couchbase Lite 1.x on Linux"
            rev["count"] = (rev["count"] as? Int ?? 0) + 1
            rev.setAttachmentNamed("note.txt", withContentType: "text/plain", content: Data("attached text".utf8))
            return true
        }
        guard let reread = try manager.existingDatabaseNamed("demo").existingDocument(withID: "hello") else {
            throw CommandFailure("document 'hello' was not saved")
        }
        print("database:   \(db.directoryURL.path)")
        print("documents:  \(db.documentCount), last sequence \(db.lastSequenceNumber)")
        print("document:   \(reread.documentID) rev \(reread.currentRevisionID ?? "-")")
        print("properties: \(jsonText(reread.userProperties ?? [:]))")
        if let attachment = reread.currentRevision?.attachmentNamed("note.txt") {
            print("attachment: \(attachment.name) \(attachment.contentType ?? "") \(attachment.length) bytes: "
                  + String(decoding: attachment.content ?? Data(), as: UTF8.self))
        }
    }
}

struct Info: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Summarise a 1.x or 2.x/3.x .cblite2 database (opened read-only).",
        discussion: """
            EXAMPLES:
              cbl info app.cblite2

            EXIT STATUS: 0 printed; 2 bad path or not a Couchbase Lite database.
            """)

    @Argument(help: "Path to NAME.cblite2")
    var path: String

    @OptionGroup(title: "Encryption")
    var encryption: EncryptionKeyOptions

    func run() throws {
        let bundle = try DatabaseBundle.locate(path, key: try encryption.key())
        // An SQLCipher-encrypted 2.x file (opened with its key) is not summarised as 2.x: the
        // 2.x layer reads plain files only.
        if bundle.format == .v2, bundle.encryptionKey == nil {
            print(try twoXSummary(bundle))
            return
        }
        let opened = try bundle.openV1(readOnly: true)
        defer { opened.close() }
        let db = opened.database
        print("name:            \(db.name)")
        print("format:          \(bundle.formatDescription)")
        print("documents:       \(db.documentCount)")
        print("last sequence:   \(db.lastSequenceNumber)")
        print("max rev depth:   \(db.maxRevTreeDepth)")
        print("public UUID:     \(db.publicUUID ?? "-")")
        let views = db.allViews
        print("views:           \(views.isEmpty ? "none" : views.map { "\($0.name) (indexed to \($0.lastSequenceIndexed))" }.joined(separator: ", "))")
    }
}

struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve the databases of a directory over CouchDB's REST API (1.x CBLListener) until interrupted.",
        discussion: """
            Prints "Serving <directory> at <URL>" once listening; stops cleanly on SIGINT/SIGTERM. \
            Without JavaScriptCore (Debian: libjavascriptcoregtk-4.1-0; see `cbl doctor`) it warns \
            once at start, serves as usual, and answers JavaScript views, filters and \
            validate_doc_update with 500 unknown_query_language.

            EXAMPLES:
              cbl serve --directory ./dbs --port 5984
              cbl serve --directory ./dbs --readonly --credentials admin:secret --ssl
              cbl serve --port 0     # any free port, printed at start
              cbl serve --no-javascript   # design documents' JavaScript not run (views 501, filters 404; writes a validate_doc_update guards are refused)
              cbl serve --encryption-key notes=letmein --encryption-key-file ledger=ledger.key

            EXIT STATUS: 0 stopped by a signal; 2 bad option or the listener could not start.
            """)

    @Option(help: "TCP port (0 picks a free one).")
    var port: UInt16 = 5984

    @Option(help: "Manager directory holding the NAME.cblite2 databases.")
    var directory: String = CBLManager.defaultDirectory()

    @Option(help: "Interface to listen on (0.0.0.0 for every interface).")
    var host: String = "127.0.0.1"

    @Flag(help: "Refuse every request that would change a database.")
    var readonly = false

    @Option(help: "A server admin as USER:PASSWORD (repeatable); with one, requests need credentials where CouchDB's would (users of the _users database, per-database _security).")
    var credentials: [String] = []

    @Flag(help: "Serve HTTPS with a self-signed certificate kept in the directory (printed at start).")
    var ssl = false

    @Option(help: "Largest JSON request body accepted, in bytes (larger ones get 413); attachment uploads stream and are not limited.")
    var maxBodySize: Int = 64 * 1024 * 1024

    @Flag(help: "Write sequences (update_seq, last_seq, seq) as 1.x LiteServ's numbers instead of CouchDB 2+'s strings (\"12-cbl\"); both are accepted in since either way.")
    var integerSequences = false

    @Flag(inversion: .prefixedNo,
          help: "Run design documents' JavaScript views, filters and validate_doc_update (5 s per call, as CouchDB).")
    var javascript = true

    @Option(help: ArgumentHelp("The password of the encrypted database NAME (repeatable).", valueName: "name=password"))
    var encryptionKey: [String] = []

    @Option(help: ArgumentHelp("A key file for the encrypted database NAME (repeatable; the file's forms are those of `cbl upgrade --key-file`).",
                               valueName: "name=file"))
    var encryptionKeyFile: [String] = []

    /// The keys of `--encryption-key` and `--encryption-key-file`, by database name.
    private func encryptionKeys() throws -> [(name: String, key: CBLSymmetricKey)] {
        func split(_ value: String, _ option: String) throws -> (String, String) {
            guard let equals = value.firstIndex(of: "="), equals != value.startIndex else {
                throw ValidationError("--\(option) must be NAME=\(option == "encryption-key" ? "PASSWORD" : "FILE")")
            }
            return (String(value[..<equals]), String(value[value.index(after: equals)...]))
        }
        var keys: [(String, CBLSymmetricKey)] = []
        for value in encryptionKey {
            let (name, password) = try split(value, "encryption-key")
            keys.append((name, CBLSymmetricKey(password: password)))
        }
        for value in encryptionKeyFile {
            let (name, file) = try split(value, "encryption-key-file")
            keys.append((name, try EncryptionKeyOptions.key(fromFile: file)))
        }
        return keys
    }

    func run() throws {
        if javascript {
            CBLRegisterJSViewCompiler()
            // Serving goes on without it: plain databases and Swift views need no JavaScript.
            if let reason = CBLJSRuntime.unavailableReason {
                FileHandle.standardError.write(Data("cbl serve: warning: \(reason)\n".utf8))
            }
        }
        let keys = try encryptionKeys()
        var options = CBLManagerOptions(readOnly: readonly, fileProtection: [])
        let manager = try CBLManager(directory: directory, options: &options)
        // Registered before the listener starts, so the first request already opens with the key (1.x CBLManager).
        for (name, key) in keys { manager.registerEncryptionKey(key, forDatabaseNamed: name) }
        let listener = CBLListener(manager: manager, port: port)
        listener.bindAddress = host
        listener.readOnly = readonly
        listener.maxBodySize = maxBodySize
        listener.integerSequences = integerSequences
        var admins: [String: String] = [:]
        for pair in credentials {
            guard let colon = pair.firstIndex(of: ":") else {
                throw ValidationError("--credentials must be USER:PASSWORD")
            }
            admins[String(pair[..<colon])] = String(pair[pair.index(after: colon)...])
        }
        if !admins.isEmpty { listener.setPasswords(admins) }
        if ssl {
            try listener.setAnonymousSSLIdentity(withLabel: "cbl serve")
        }
        try listener.start()
        if ssl, let pem = listener.sslCertificatePEM { print(pem.trimmingCharacters(in: .whitespacesAndNewlines)) }
        print("Serving \(manager.directory) at \(listener.url?.absoluteString ?? "port \(listener.port)")\(readonly ? " (read-only)" : "")")
        print("Press Ctrl-C to stop.")
        fflush(nil)

        // Run until SIGINT or SIGTERM, then stop cleanly.
        let stop = StopSignals()
        stop.wait()
        print("Stopping.")
        listener.stop()
        manager.close()
        stop.cancel()
    }
}
