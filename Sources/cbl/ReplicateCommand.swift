import ArgumentParser
import CouchbaseLite
import Foundation

/// `cbl replicate SOURCE TARGET`: one side a local NAME.cblite2, the other a database URL.
struct Replicate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Replicate between a local .cblite2 database and a CouchDB-protocol database URL.",
        discussion: """
            One of SOURCE and TARGET is a local NAME.cblite2 (created when it is the target and \
            --create-target is given), the other an http(s) URL of a CouchDB, Sync Gateway, \
            PouchDB-server or `cbl serve` database. Credentials go in the URL (https://user:pw@host/db).

            A pull can be filtered on the server: --filter names the server's filter function \
            (design/filter, or sync_gateway/bychannel) and each --filter-param KEY=VALUE is passed \
            to it as a query parameter. A push filter is a function an app registers, which cbl \
            cannot run: --filter is refused for a push.

            EXAMPLES:
              cbl replicate http://127.0.0.1:5984/tasks ./tasks.cblite2 --create-target
              cbl replicate ./tasks.cblite2 https://admin:secret@couch.example.com/tasks --create-target
              cbl replicate http://127.0.0.1:5984/tasks ./tasks.cblite2 --continuous
              cbl replicate http://127.0.0.1:5984/tasks ./mine.cblite2 --create-target \\
                  --filter app/by_owner --filter-param owner=alice
              cbl replicate https://sg.example.com/db ./db.cblite2 --create-target \\
                  --filter sync_gateway/bychannel --filter-param channels=public

            EXIT STATUS: 0 when the replication finished; 1 when it stopped with an error; \
            2 bad arguments (the error says which).
            """)

    @Argument(help: "Where documents come from: NAME.cblite2 or a database URL.")
    var source: String

    @Argument(help: "Where documents go: NAME.cblite2 or a database URL.")
    var target: String

    @OptionGroup(title: "Encryption")
    var encryption: EncryptionKeyOptions

    @Flag(help: "Keep running and follow new changes until interrupted.")
    var continuous = false

    @Flag(name: .customLong("create-target"), help: "Create the target database if it does not exist.")
    var createTarget = false

    @Option(help: ArgumentHelp("Pull only: the server-side filter to apply (design/filter).", valueName: "name"))
    var filter: String?

    @Option(name: .customLong("filter-param"), help: ArgumentHelp(
        "A parameter for the --filter function (repeatable).", valueName: "key=value"))
    var filterParams: [String] = []

    @Option(name: .customLong("doc-id"), help: "Replicate only this document (repeatable).")
    var docIDs: [String] = []

    @Option(help: "PEM file of a certificate to trust (a CA or the server's self-signed certificate).")
    var cacert: String?

    func run() throws {
        let sourceIsURL = Replicate.isURL(source), targetIsURL = Replicate.isURL(target)
        guard sourceIsURL != targetIsURL else {
            throw ValidationError("exactly one of SOURCE and TARGET must be a URL, the other a NAME.cblite2 path")
        }
        if !sourceIsURL && filter != nil {
            throw ValidationError("--filter applies to a pull: a push filter is a function the app registers, which cbl cannot run")
        }
        if filter == nil && !filterParams.isEmpty {
            throw ValidationError("--filter-param needs --filter")
        }
        let params = try parseAssignments(filterParams, option: "--filter-param")
        let localPath = sourceIsURL ? target : source
        guard let remote = URL(string: sourceIsURL ? source : target) else { throw ValidationError("invalid URL") }
        let local = URL(fileURLWithPath: localPath).standardizedFileURL
        guard local.pathExtension == "cblite2" else { throw ValidationError("\(localPath) is not a NAME.cblite2 path") }
        let manager = try CBLManager(directory: local.deletingLastPathComponent().path)
        defer { manager.close() }
        let name = local.deletingPathExtension().lastPathComponent
        if let key = try encryption.key() { manager.registerEncryptionKey(key, forDatabaseNamed: name) }
        let db = (sourceIsURL && createTarget) ? try manager.databaseNamed(name) : try manager.existingDatabaseNamed(name)
        let replication = sourceIsURL ? db.createPullReplication(remote) : db.createPushReplication(remote)
        replication.continuous = continuous
        replication.createTarget = createTarget
        if let filter { replication.filter = filter }
        if !params.isEmpty { replication.filterParams = Dictionary(params, uniquingKeysWith: { _, last in last }) }
        if !docIDs.isEmpty { replication.documentIDs = docIDs }
        if let cacert {
            try replication.setAnchorCertificates(pem: [String(contentsOfFile: cacert, encoding: .utf8)], onlyThese: false)
        }
        let progress = Progress(terminal: isatty(1) != 0)
        replication.addChangeListener { r in progress.show(r) }
        replication.start()
        while replication.running { usleep(50_000) }
        progress.finish(replication)
        if let error = replication.lastError {
            let text = (error as? CBLError).map { "\($0.code) \($0.message)" } ?? "\(error)"
            throw CommandFailure("replication stopped: \(text)", status: ExitStatus.problemFound)
        }
    }

    static func isURL(_ s: String) -> Bool {
        let lower = s.lowercased()
        return lower.hasPrefix("http://") || lower.hasPrefix("https://")
    }

    /// A one-line progress display on a terminal; plain lines when piped.
    // @unchecked because `lastLine` is only touched under `lock`; `terminal` is a let.
    final class Progress: @unchecked Sendable {
        let terminal: Bool
        private let lock = NSLock()
        private var lastLine = ""

        init(terminal: Bool) { self.terminal = terminal }

        func line(_ r: CBLReplication) -> String {
            let done = r.completedChangesCount, total = r.changesCount
            let state: String
            switch r.status {
            case .active: state = "active"
            case .idle: state = "idle (caught up)"
            case .offline: state = "offline, retrying"
            case .stopped: state = "stopped"
            }
            guard total > 0 else { return "\(state): \(done) changes" }
            let width = 30
            let filled = min(width, Int(Double(done) / Double(total) * Double(width)))
            return "[" + String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
                + "] \(done)/\(total) \(state)"
        }

        func show(_ r: CBLReplication) {
            let text = line(r)
            lock.lock(); defer { lock.unlock() }
            guard text != lastLine else { return }
            lastLine = text
            if terminal {
                FileHandle.standardOutput.write(Data(("\r\u{1B}[K" + text).utf8))
            } else if r.status != .active {
                print(text)
            }
        }

        func finish(_ r: CBLReplication) {
            let text = line(r)
            if terminal { FileHandle.standardOutput.write(Data(("\r\u{1B}[K" + text + "\n").utf8)) } else { print(text) }
        }
    }
}
