import ArgumentParser
import CouchbaseLite
import CouchbaseLiteSwift
import Foundation

/// `cbl dump PATH`: every document as one JSON object per line, from a 1.x or a 2.x/3.x database.
struct Dump: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print every document as one JSON object per line (1.x and 2.x/3.x databases, read-only).",
        discussion: """
            Each line is {"_id":…,"_rev":…,<properties>} for the document's current (winning) \
            revision, in document-ID order; properties are written with sorted keys. Attachments \
            appear as their metadata (1.x `_attachments` stubs, 2.x blob dictionaries), never their \
            content. The database is opened read-only.

            EXAMPLES:
              cbl dump app.cblite2
              cbl dump app.cblite2 --revs --conflicts | jq -c 'select(._conflicts)'
              cbl dump app.cblite2 --deleted --local > everything.jsonl

            EXIT STATUS: 0 dumped; 2 bad path or not a Couchbase Lite database.
            """)

    @Argument(help: "The database: NAME.cblite2 (1.x or 2.x/3.x).")
    var path: String

    @OptionGroup(title: "Encryption")
    var encryption: EncryptionKeyOptions

    @Flag(help: "Add _revisions: the current revision's history, as {\"start\":GEN,\"ids\":[newest…oldest]}.")
    var revs = false

    @Flag(help: "Add _conflicts: the other live leaf revisions of a document in conflict.")
    var conflicts = false

    @Flag(help: "Also dump the _local/ documents (after the others).")
    var local = false

    @Flag(help: "Include deleted documents (tombstones, with \"_deleted\":true).")
    var deleted = false

    func run() throws {
        let bundle = try DatabaseBundle.locate(path, key: try encryption.key())
        let output = Output()
        switch bundle.format {
        case .v1: try dumpV1(bundle, output)
        case .v2: try dumpV2(bundle, output)
        }
        output.flush()
    }

    // MARK: 1.x

    private func dumpV1(_ bundle: DatabaseBundle, _ output: Output) throws {
        let opened = try bundle.openV1(readOnly: true)
        defer { opened.close() }
        let db = opened.database
        let query = db.createAllDocumentsQuery()
        query.allDocsMode = deleted ? .includeDeleted : .allDocs
        query.prefetch = true
        for row in try query.run() {
            guard let docID = row.sourceDocumentID else { continue }
            let value = row.value as? [String: Any] ?? [:]
            let revID = value["rev"] as? String
            let isDeleted = value["deleted"] as? Bool ?? false
            var extra: [(String, Any)] = []
            if revs || conflicts, let doc = db.existingDocument(withID: docID) {
                if revs, let revID, let revision = doc.revision(withID: revID) {
                    extra.append(("_revisions", Self.revisions(try revision.getHistory().reversed().compactMap(\.revisionID))))
                }
                if conflicts {
                    let others = try doc.getConflictingRevisions().compactMap(\.revisionID).filter { $0 != revID }
                    if !others.isEmpty { extra.append(("_conflicts", others)) }
                }
            }
            output.line(Self.documentLine(id: docID, rev: revID, deleted: isDeleted,
                                          properties: row.documentProperties ?? [:], extra: extra))
        }
        if local {
            for doc in try db.allLocalDocuments() {
                let body = doc.json.isEmpty ? [:] : ((try? CBLJSON.jsonObject(with: Data(doc.json))) as? [String: Any] ?? [:])
                output.line(Self.documentLine(id: doc.docID, rev: doc.revID, deleted: false, properties: body, extra: []))
            }
        }
    }

    // MARK: 2.x/3.x

    private func dumpV2(_ bundle: DatabaseBundle, _ output: Output) throws {
        let file = try bundle.openV2File()
        defer { file.close() }
        try file.forEachRecord(includeDeleted: deleted) { record in
            let properties: [String: Any]
            do {
                properties = try file.properties(ofBody: record.body ?? [])
            } catch {
                throw CommandFailure("document '\(record.docID)' has a corrupt body: \(error)")
            }
            var extra: [(String, Any)] = []
            if revs, record.revisionID != nil {
                extra.append(("_revisions", Self.revisions(record.tree.currentHistory)))
            }
            if conflicts {
                let others = record.tree.revisions.enumerated()
                    .filter { $0.offset > 0 && $0.element.isLeaf && !$0.element.isDeleted }
                    .compactMap { $0.element.revIDString }
                if !others.isEmpty { extra.append(("_conflicts", others)) }
            }
            output.line(Self.documentLine(id: record.docID, rev: record.revisionID, deleted: record.isDeleted,
                                          properties: properties, extra: extra))
        }
        if local {
            for raw in try file.rawRecords(store: "local") {
                let properties = DataFile.properties(ofRawBody: raw.body)
                let id = raw.key.hasPrefix("_local/") ? raw.key : "_local/" + raw.key
                let rev = String(bytes: raw.version, encoding: .utf8).flatMap { $0.isEmpty ? nil : $0 }
                output.line(Self.documentLine(id: id, rev: rev, deleted: false, properties: properties, extra: []))
            }
        }
    }

    // MARK: Lines

    /// CouchDB's `_revisions`: the generation of the newest revision and the digests, newest first.
    static func revisions(_ history: [String]) -> [String: Any] {
        let start = history.first.flatMap { $0.split(separator: "-", maxSplits: 1).first }.flatMap { Int($0) } ?? history.count
        let ids = history.map { id -> String in
            guard let dash = id.firstIndex(of: "-") else { return id }
            return String(id[id.index(after: dash)...])
        }
        return ["start": start, "ids": ids]
    }

    /// `{"_id":…,"_rev":…[,"_deleted":true],<properties, sorted>[,extra…]}`.
    static func documentLine(id: String, rev: String?, deleted: Bool, properties: [String: Any],
                             extra: [(String, Any)]) -> String {
        var members: [(String, String)] = [("_id", jsonText(id))]
        if let rev { members.append(("_rev", jsonText(rev))) }
        if deleted { members.append(("_deleted", "true")) }
        let reserved: Set<String> = ["_id", "_rev", "_deleted", "_revisions", "_conflicts"]
        for key in properties.keys.filter({ !reserved.contains($0) }).sorted(by: CBLJSON.canonicalKeyPrecedes) {
            members.append((key, jsonText(plainJSON(properties[key]!))))
        }
        for (key, value) in extra { members.append((key, jsonText(value))) }
        return jsonObjectLine(members)
    }
}

/// A value JSON can hold: Fleece `data` values become Base64 strings.
func plainJSON(_ value: Any) -> Any {
    switch value {
    case let data as Data: return data.base64EncodedString()
    case let dict as [String: Any]: return dict.mapValues(plainJSON)
    case let array as [Any]: return array.map(plainJSON)
    default: return value
    }
}
