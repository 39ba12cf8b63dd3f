import ArgumentParser
import CouchbaseLiteSwift
import CouchbaseLiteUpgrade
import Foundation

struct Upgrade: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Convert a Couchbase Lite 1.x database into the 2.x format (what 2.x does on open).",
        discussion: """
            Writes DEST_DIR/NAME.cblite2 (NAME defaults to the source's name). The source is only read.
            Like Couchbase Lite 2.x: winning revisions only, attachments kept under _attachments,
            design documents, views and _local documents dropped (see --include-local).

            EXAMPLES:
              cbl upgrade old.cblite2 ./converted
              cbl upgrade old.cblite2 ./converted --name app --report report.json --include-local
              cbl upgrade old.cblite2 --in-place
              cbl upgrade legacy.cblite ./converted --legacy
              cbl upgrade secret.cblite2 ./converted --password 'letmein'
              cbl upgrade old.cblite2 ./converted --catch-up
              cbl upgrade old.cblite2 ./converted --catch-up --follow --interval 2

            CATCH-UP: --catch-up converts only what changed in the source since the last run into \
            an existing DEST made by cbl upgrade (new, changed, deleted, conflicted and purged documents, \
            their attachments; _local documents too with --include-local), in transactions that record the source sequence reached, so an interrupted \
            run is completed by the next. A DEST converted from another database is refused. \
            --follow repeats it every --interval seconds while the 1.x app runs, until SIGINT/SIGTERM \
            (the batch under way is finished first): the final cut-over then converts only the last writes.

            ENCRYPTED SOURCES: give the key with --password or --key-file. Attachments are decrypted \
            while they are copied. The converted database is NOT encrypted (Couchbase Lite 2.x \
            Community has no encryption): the summary's first line says so, and \
            --refuse-unencrypted-output makes it an error instead.

            EXIT STATUS: 0 converted; 2 bad option, or a source that cannot be converted \
            (ForestDB, encrypted without its key or with a wrong one, already 2.x, damaged), with the reason.
            """)

    @Argument(help: "The 1.x database: NAME.cblite2 (or a legacy NAME.cblite file with --legacy).")
    var source: String

    @Argument(help: "Directory to create the 2.x database in (not needed with --in-place).")
    var destinationDirectory: String?

    @Option(help: "Name of the new database (default: the source's name).")
    var name: String?

    @Option(help: "Also write the report as JSON to this file.")
    var report: String?

    @Flag(help: "Replace the source with the converted database, as 2.x does when it opens a 1.x file.")
    var inPlace = false

    @Flag(help: "Copy _local documents into the 'local' key-store (2.x drops them).")
    var includeLocal = false

    @Flag(help: "Carry document expiration times (stored in milliseconds, for Couchbase Lite 2.5+).")
    var includeExpiration = false

    @Flag(help: "Accept a legacy single-file .cblite database (1.0/1.1).")
    var legacy = false

    @OptionGroup(title: "Encryption")
    var encryption: EncryptionKeyOptions

    @Flag(help: "Refuse to convert an encrypted source, since the converted database would not be encrypted (exit 2, nothing written).")
    var refuseUnencryptedOutput = false

    @Flag(help: "Bring an earlier conversion in DEST up to date with the source's changes since it.")
    var catchUp = false

    @Flag(help: "With --catch-up: keep catching up until SIGINT/SIGTERM.")
    var follow = false

    @Option(help: "With --follow: seconds between catch-up runs.")
    var interval: Double = 1

    @Option(help: "With --catch-up: documents per transaction (each records the source sequence it reached).")
    var batchSize: Int = 1000

    func validate() throws {
        if follow && !catchUp { throw ValidationError("--follow needs --catch-up") }
        if catchUp && (inPlace || legacy) { throw ValidationError("--catch-up takes a .cblite2 source and an existing destination (no --in-place, --legacy)") }
        if interval <= 0 { throw ValidationError("--interval must be positive") }
        if batchSize <= 0 { throw ValidationError("--batch-size must be positive") }
        if !inPlace && destinationDirectory == nil {
            throw ValidationError("Give a destination directory, or --in-place")
        }
        if inPlace && (destinationDirectory != nil || name != nil) {
            throw ValidationError("--in-place replaces the source; it takes no destination or --name")
        }
    }

    func run() throws {
        let sourceURL = URL(fileURLWithPath: source).standardizedFileURL
        var baseName = name ?? sourceURL.deletingPathExtension().lastPathComponent
        if baseName.hasSuffix(".cblite2") { baseName = String(baseName.dropLast(8)) }
        let destination = inPlace ? sourceURL : URL(fileURLWithPath: destinationDirectory ?? ".")
            .appendingPathComponent("\(baseName).cblite2", isDirectory: true).standardizedFileURL
        var options = UpgradeOptions(includeLocalDocuments: includeLocal, includeExpiration: includeExpiration,
                                     allowLegacySingleFile: legacy, inPlace: inPlace)
        options.encryptionKey = try encryption.key()
        if options.encryptionKey != nil && refuseUnencryptedOutput {
            throw CommandFailure("the source is encrypted and the converted database would NOT be encrypted "
                                 + "(Couchbase Lite 2.x Community has no encryption); refused by --refuse-unencrypted-output")
        }
        if catchUp {
            var catchUp = CatchUpUpgrader(source: sourceURL, destination: destination, options: options)
            catchUp.batchSize = batchSize
            try runCatchUp(catchUp)
            return
        }
        let bar = ProgressBar()
        let result: UpgradeReport
        do {
            result = try DatabaseUpgrader(source: sourceURL, destination: destination, options: options)
                .run { bar.show($0) }
            bar.finish()
        } catch {
            bar.finish()
            throw error
        }
        if let report {
            try result.jsonData().write(to: URL(fileURLWithPath: report))
        }
        print(result.summary)
    }
}

extension Upgrade {
    /// One catch-up run, or with --follow runs until SIGINT/SIGTERM (the batch under way is finished).
    private func runCatchUp(_ catchUp: CatchUpUpgrader) throws {
        guard follow else {
            print(try catchUp.run().summary)
            return
        }
        let stop = StopSignals()
        defer { stop.cancel() }
        try catchUp.follow(interval: interval, shouldStop: { stop.isRequested }) { report in
            if report.toSequence != report.fromSequence || report.documentsPurged > 0 {
                print(report.summary)
                fflush(nil)
            }
        }
        print("Stopped.")
    }
}

/// A one-line progress bar on standard error, drawn only when it is a terminal.
final class ProgressBar {
    private let enabled = isatty(STDERR_FILENO) != 0
    private var lastDrawn = -1

    func show(_ progress: UpgradeProgress) {
        guard enabled else { return }
        let percent = Int(progress.fraction * 100)
        guard percent != lastDrawn else { return }
        lastDrawn = percent
        let width = 30
        let filled = width * percent / 100
        let bar = String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled)
        FileHandle.standardError.write(Data("\r[\(bar)] \(percent)% \(progress.phase.rawValue) \(progress.completed)/\(progress.total)".utf8))
    }

    func finish() {
        guard enabled, lastDrawn >= 0 else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
    }
}

/// `cbl info` for a 2.x/3.x bundle (``DatabaseBundle/locate(_:key:)`` read its schema version).
func twoXSummary(_ bundle: DatabaseBundle) throws -> String {
    let file = try bundle.openV2File()
    defer { file.close() }
    let uuid = (try file.info(Schema2.InfoKey.publicUUID)).map { $0.map { String(format: "%02x", $0) }.joined() } ?? "-"
    return """
        name:            \(bundle.name)
        format:          Couchbase Lite 2.x/3.x (schema \(bundle.schemaVersion), \(file.versioning == 2 ? "version vectors" : "revision trees"))
        documents:       \(try file.liveDocumentCount())
        last sequence:   \(try file.lastSequence())
        shared keys:     \(file.sharedKeys.count)
        public UUID:     \(uuid)
        """
}
