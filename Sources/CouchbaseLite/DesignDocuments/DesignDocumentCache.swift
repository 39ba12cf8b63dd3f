import Foundation

/// What a database compiled from its design documents, each entry with the revision of the
/// design document it came from, so a new revision recompiles it (guarded by the database's lock).
struct DesignDocumentCache {
    /// View name (`design/view`) → the design document revision its functions came from.
    var views: [String: String] = [:]
    /// Filter name (`design/filter`) → the design document revision and the compiled filter.
    var filters: [String: (revID: String, block: CBLFilterBlock)] = [:]
    /// The `validate_doc_update` functions of every design document, by design document ID,
    /// or nil when a design document changed since they were compiled.
    var validations: [(docID: String, validate: CBLDesignValidation)]?
    /// Whether `validations` were compiled (true) or stand for functions no compiler could run
    /// (false: each refuses every write); they are rebuilt when a compiler comes or goes.
    var validationsCompiled = false
    /// How many design documents have a `validate_doc_update` (whatever the compilers), or nil
    /// when a design document changed since they were counted.
    var validateFunctionCount: Int?
}
