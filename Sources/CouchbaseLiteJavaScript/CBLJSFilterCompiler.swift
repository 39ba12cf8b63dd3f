import CouchbaseLite
import Foundation

/// Compiles JavaScript filter functions `function(doc, req)` and design documents'
/// `validate_doc_update(newDoc, oldDoc, userCtx, secObj)`, as CouchDB runs them: register it
/// with `CBLDatabase.setFilterCompiler(CBLJSFilterCompiler())`.
// @unchecked because NSObject subclasses are not checked; its fields are lets of Sendable or lock-guarded types.
public final class CBLJSFilterCompiler: NSObject, CBLFilterCompiler, @unchecked Sendable {
    /// The limits every call of a compiled function runs under.
    public let limits: CBLJSLimits

    /// A compiler whose functions run under `limits` (CouchDB's defaults: 5 s per call).
    public init(limits: CBLJSLimits = CBLJSLimits()) {
        self.limits = limits
    }

    public func compileFilterFunction(_ filterSource: String, language: String) -> CBLFilterBlock? {
        try? compileDesignDocumentFilter(filterSource, language: language, designDocument: [:])
    }

    public func compileDesignDocumentFilter(_ filterSource: String, language: String,
                                            designDocument: [String: Any]) throws -> CBLFilterBlock {
        let sandbox = try CBLJSViewCompiler.sandbox(filterSource, language: language, root: designDocument,
                                                    what: "filter", limits: limits)
        let dbName = ""
        return { revision, params in
            var doc = revision.properties ?? [:]
            doc["_id"] = revision.document.documentID
            if let revID = revision.revisionID { doc["_rev"] = revID }
            if revision.isDeletion { doc["_deleted"] = true }
            // CouchDB's request object: the URL's query parameters, and who asks.
            var query: [String: Any] = [:]
            for (key, value) in params ?? [:] { query["\(key.base)"] = value }
            let req: [String: Any] = ["query": query, "method": "GET",
                                      "userCtx": ["db": dbName, "name": NSNull(), "roles": ["_admin"]] as [String: Any]]
            do {
                let arguments = try JSONBridge.text([doc, req] as [Any])
                return try sandbox.call(.filter, json: arguments) == Array("true".utf8)
            } catch {
                // CouchDB leaves out a change its filter fails on.
                jsLogger.warning("filter function failed on document '\(revision.document.documentID)': \(error); the change is left out")
                return false
            }
        }
    }

    public func compileValidateDocUpdate(_ source: String, language: String,
                                         designDocument: [String: Any]) throws -> CBLDesignValidation? {
        let sandbox = try CBLJSViewCompiler.sandbox(source, language: language, root: designDocument,
                                                    what: "validate_doc_update", limits: limits)
        return { newDoc, oldDoc, userCtx, secObj in
            let answer: [UInt8]?
            do {
                let arguments = try JSONBridge.text([newDoc, oldDoc ?? NSNull(), userCtx, secObj] as [Any])
                answer = try sandbox.call(.validate, json: arguments)
            } catch {
                throw CBLError(500, "validate_doc_update failed: \(error)")
            }
            // null: accepted; [status, reason]: `throw({forbidden: …})` (403) or `{unauthorized: …}` (401).
            guard let answer, let refusal = try? JSONBridge.parse(answer) as? [Any], refusal.count == 2,
                  let status = refusal[0] as? Int, let reason = refusal[1] as? String else { return }
            throw CBLError(status, reason)
        }
    }
}
