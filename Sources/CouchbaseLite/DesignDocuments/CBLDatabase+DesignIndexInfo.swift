import Crypto
import Foundation
import JSONCore

/// What CouchDB's `GET /db/_design/NAME/_info` reports of a design document's view index.
package struct DesignIndexInfo: Sendable {
    /// Changes whenever the views' definitions do (MD5 of language, views and options).
    package var signature: String
    package var language: String
    /// The database sequence every view of the design document is indexed up to.
    package var updateSeq: Int64
    /// Database sequences not indexed yet by the view furthest behind.
    package var pendingSequences: Int64
    package var fileSize: Int64
    package var activeSize: Int64
    package var externalSize: Int64
}

extension CBLDatabase {
    /// The index information of `_design/design`'s views, compiling them first (as opening a
    /// CouchDB index does); nil when the design document does not exist.
    package func designIndexInfo(_ design: String) throws -> DesignIndexInfo? {
        guard let (names, ddoc) = try designViewNames(design) else { return nil }
        let language = ddoc["language"] as? String ?? "javascript"
        var definition: [String: Any] = ["language": language, "views": ddoc["views"] ?? [:] as [String: Any]]
        if let options = ddoc["options"] { definition["options"] = options }
        let signature = Insecure.MD5.hash(data: try JSON.data(definition, sortedKeys: true))
            .map { String(format: "%02x", $0) }.joined()
        var info = DesignIndexInfo(signature: signature, language: language, updateSeq: 0, pendingSequences: 0,
                                   fileSize: 0, activeSize: 0, externalSize: 0)
        try read { store in
            let last = try store.lastSequence
            var indexed: Int64?
            for name in names {
                guard let record = try store.viewRecord(named: name) else { indexed = 0; continue }
                indexed = min(indexed ?? .max, record.lastSequence)
                let sizes = try store.viewIndexSizes(record)
                info.fileSize += sizes.file
                info.activeSize += sizes.active
                info.externalSize += sizes.external
            }
            info.updateSeq = indexed ?? last
            info.pendingSequences = max(0, last - info.updateSeq)
        }
        return info
    }

    /// Compacts the indexes of `_design/design`'s views (CouchDB's `POST /db/_compact/NAME`);
    /// false when the design document does not exist.
    package func compactDesignIndexes(_ design: String) throws -> Bool {
        guard let (names, _) = try designViewNames(design) else { return false }
        try checkWritable()
        try write(atomic: true) { store in
            for name in names {
                if let record = try store.viewRecord(named: name) { try store.compactViewIndex(record) }
            }
        }
        return true
    }

    /// The full names (`design/view`) of the views `_design/design` defines, each compiled and
    /// registered where it can be, and the design document's properties. A view that cannot be
    /// compiled (no compiler, no JavaScriptCore, a syntax error) has no index to report; its query
    /// says why.
    private func designViewNames(_ design: String) throws -> (names: [String], properties: [String: Any])? {
        guard let found = try designDocument(design) else { return nil }
        let views = found.properties["views"] as? [String: Any] ?? [:]
        let names = views.keys.filter { $0 != "lib" }.sorted().map { "\(design)/\($0)" }
        for name in names { _ = try? compileDesignDocumentView(named: name) }
        return (names, found.properties)
    }
}
