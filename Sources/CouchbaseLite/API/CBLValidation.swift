import Foundation

/// A validation function: inspect `newRevision`, call `context.reject(withMessage:)` to refuse it.
public typealias CBLValidationBlock = (_ newRevision: CBLRevision, _ context: CBLValidationContext) -> Void
/// A replication filter: return true to replicate the revision.
public typealias CBLFilterBlock = (_ revision: CBLSavedRevision, _ params: [AnyHashable: Any]?) -> Bool

/// What a validation function knows about the change, and how it rejects it.
// @unchecked because a validation block uses its context on the writer's thread only, during the save it validates.
public final class CBLValidationContext: NSObject, @unchecked Sendable {
    /// The revision being replaced (the new revision's parent), if any.
    public let currentRevision: CBLSavedRevision?
    private let newProperties: [String: Any]
    private(set) var rejectionMessage: String?
    private(set) var rejected = false
    /// 403, or what a design document's `validate_doc_update` threw (401 for `{unauthorized}`).
    private(set) var rejectionStatus = 403
    /// The error to throw instead of a `CBLError` with `rejectionStatus`, when one was given.
    private(set) var rejectionError: CBLDesignFunctionError?

    init(currentRevision: CBLSavedRevision?, newProperties: [String: Any]) {
        self.currentRevision = currentRevision
        self.newProperties = newProperties
    }

    /// The top-level keys whose values differ between the current and new revision.
    public var changedKeys: [String] {
        let old = currentRevision?.properties ?? [:]
        var keys = Set(old.keys).union(newProperties.keys)
        keys.remove("_rev")
        return keys.filter { key in
            guard let a = old[key], let b = newProperties[key] else { return true }
            return !jsonEqual(a, b)
        }.sorted()
    }

    /// Rejects the revision with status 403 and a default message.
    public func reject() { reject(withMessage: nil) }

    /// Rejects the revision with status 403 and `message`.
    public func reject(withMessage message: String?) {
        rejected = true
        if rejectionMessage == nil { rejectionMessage = message }
    }

    /// Rejects the revision with a status other than 403 (a design document's `{unauthorized}`: 401).
    func reject(status: Int, message: String) {
        if !rejected { rejectionStatus = status }
        reject(withMessage: message)
    }

    /// Rejects the revision with `error` itself (a design document's validation that cannot run).
    func reject(error: CBLDesignFunctionError) {
        if !rejected { rejectionError = error }
        reject(withMessage: error.message)
    }

    /// Calls `block` for each changed key; rejects if it returns false for any.
    @discardableResult
    public func validateChanges(_ block: (_ key: String, _ oldValue: Any?, _ newValue: Any?) -> Bool) -> Bool {
        let old = currentRevision?.properties ?? [:]
        for key in changedKeys where !block(key, old[key], newProperties[key]) {
            reject(withMessage: "Illegal change to '\(key)' property")
            return false
        }
        return true
    }
}

/// Structural equality of JSON-like values.
func jsonEqual(_ a: Any, _ b: Any) -> Bool {
    switch (a, b) {
    case (let x as String, let y as String): return x == y
    case (let x as Bool, let y as Bool): return x == y
    case (let x as Int, let y as Int): return x == y
    case (let x as Double, let y as Double): return x == y
    case (let x as Int, let y as Double): return Double(x) == y
    case (let x as Double, let y as Int): return x == Double(y)
    case (is NSNull, is NSNull): return true
    case (let x as [Any], let y as [Any]):
        return x.count == y.count && zip(x, y).allSatisfy { jsonEqual($0, $1) }
    case (let x as [String: Any], let y as [String: Any]):
        return x.count == y.count && x.allSatisfy { key, value in y[key].map { jsonEqual(value, $0) } ?? false }
    default: return false
    }
}

extension CBLDatabase {
    /// Registers (or with nil, removes) a validation function, run before every revision is saved.
    public func setValidationNamed(_ name: String, as block: CBLValidationBlock?) {
        let replaced = lock.withLock { s -> CBLValidationBlock? in
            if let block { return s.validations.updateValue(block, forKey: name) }
            return s.validations.removeValue(forKey: name)
        }
        _ = replaced   // released here, after the lock
    }

    /// The validation function registered under `name`.
    public func validationNamed(_ name: String) -> CBLValidationBlock? {
        lock.withLock { $0.validations[name] }
    }

    /// Registers (or with nil, removes) a replication filter function.
    public func setFilterNamed(_ name: String, as block: CBLFilterBlock?) {
        let replaced = lock.withLock { s -> CBLFilterBlock? in
            if let block { return s.filters.updateValue(block, forKey: name) }
            return s.filters.removeValue(forKey: name)
        }
        _ = replaced   // released here, after the lock
    }

    /// The filter function registered under `name`.
    public func filterNamed(_ name: String) -> CBLFilterBlock? {
        lock.withLock { $0.filters[name] }
    }

    /// The validations a save runs (the app's, then the design documents'); empty, with one lock
    /// taken, when the app registered none and no design document has a `validate_doc_update`.
    var validationBlocksToRun: [String: CBLValidationBlock] {
        let none = lock.withLock { $0.validations.isEmpty && $0.designDocumentCache.validateFunctionCount == 0 }
        return none ? [:] : validationBlocks
    }

    /// The registered validation functions (a snapshot: they run outside the lock).
    var validationBlocks: [String: CBLValidationBlock] {
        var all = lock.withLock { $0.validations }
        // Design documents' validate_doc_update run after the app's (the key sorts last).
        if let design = designDocumentValidation() { all["\u{10FFFF}_design"] = design }
        return all
    }

    /// Runs every validation function on a revision about to be saved, seen as the app will read
    /// it (its stored properties plus `_id`, `_rev` and, for a deletion, `_deleted`); throws 403
    /// with the rejection message.
    func runValidations(_ validations: [String: CBLValidationBlock], storedProperties: [String: Any],
                        document: CBLDocument, revID: String, deleted: Bool, parent: StoredRevision?) throws {
        var newProperties = storedProperties
        for key in CBLDatabase.strippedSpecialKeys { newProperties[key] = nil }
        newProperties["_id"] = document.documentID
        newProperties["_rev"] = revID
        if deleted { newProperties["_deleted"] = true }
        let newRevision = CBLSavedRevision(document: document, revID: revID, sequence: 0, deleted: deleted,
                                           body: nil, properties: newProperties)
        let current = parent.map { CBLSavedRevision(document: document, stored: $0) }
        for name in validations.keys.sorted() {
            guard let block = validations[name] else { continue }
            let context = CBLValidationContext(currentRevision: current, newProperties: newProperties)
            block(newRevision, context)
            if context.rejected {
                if let error = context.rejectionError { throw error }
                throw CBLError(context.rejectionStatus, context.rejectionMessage ?? "invalid document")
            }
        }
    }
}
