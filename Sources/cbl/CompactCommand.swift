import ArgumentParser
import Foundation

/// `cbl compact PATH`: compacts a 1.x or 2.x/3.x database in place and reports the sizes.
struct Compact: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Compact a database in place (1.x or 2.x/3.x) and print its size before and after.",
        discussion: """
            1.x (CBLDatabase.compact, spec 3.7, 4.5): discards the bodies of non-leaf revisions, \
            prunes old history, vacuums the file and deletes attachment blobs no revision refers \
            to. Opening a 1.x database for writing also brings an older schema (101) up to 102, \
            as 1.x itself does.
            2.x/3.x (Database.compact): deletes blobs no document refers to and vacuums the file.

            The database must not be open in another process. Make a copy first if in doubt.

            EXAMPLES:
              cbl compact app.cblite2
              cp -a app.cblite2 /tmp/ && cbl compact /tmp/app.cblite2

            EXIT STATUS: 0 compacted; 2 bad path, not a Couchbase Lite database, or the \
            compaction failed (the message says why).
            """)

    @Argument(help: "The database: NAME.cblite2 (1.x or 2.x/3.x).")
    var path: String

    @OptionGroup(title: "Encryption")
    var encryption: EncryptionKeyOptions

    func run() throws {
        let bundle = try DatabaseBundle.locate(path, key: try encryption.key())
        let before = BundleSize(bundle)
        switch bundle.format {
        case .v1:
            let opened = try bundle.openV1(readOnly: false)
            defer { opened.close() }
            try opened.database.compact()
            try opened.database.close()
        case .v2:
            let db = try bundle.openV2Database(readOnly: false)
            defer { try? db.close() }
            try db.compact()
            try db.close()
        }
        let after = BundleSize(bundle)
        let output = Output()
        output.line("database:  \(bundle.url.path)")
        output.line("format:    \(bundle.formatDescription)")
        output.line("before:    \(Self.describe(before))")
        output.line("after:     \(Self.describe(after))")
        let saved = before.total - after.total
        let percent = before.total > 0 ? Double(saved) * 100 / Double(before.total) : 0
        output.line("saved:     \(saved) bytes (\(String(format: "%.1f", percent))%)")
        output.flush()
    }

    static func describe(_ size: BundleSize) -> String {
        "\(size.total) bytes (database \(size.database), blobs \(size.blobs))"
    }
}
