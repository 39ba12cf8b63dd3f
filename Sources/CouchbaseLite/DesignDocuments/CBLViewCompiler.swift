import Foundation

/// Compiles the source of map and reduce functions (as kept in design documents) into blocks, as
/// 1.x's `CBLViewCompiler` did; register one with ``CBLView/setCompiler(_:)``.
public protocol CBLViewCompiler: AnyObject, Sendable {
    /// A map block running `mapSource`, or nil if the language is not this compiler's or the source does not compile.
    func compileMapFunction(_ mapSource: String, language: String) -> CBLMapBlock?
    /// A reduce block running `reduceSource`, or nil if the language is not this compiler's or the source does not compile.
    func compileReduceFunction(_ reduceSource: String, language: String) -> CBLReduceBlock?
    /// The map function of a design document's view, with the document's CommonJS library
    /// (`views.lib`) reachable through `require`; throws a ``CBLDesignFunctionError`` (`.compilation`) naming what failed to compile.
    func compileDesignDocumentMap(_ mapSource: String, language: String, library: [String: Any]) throws -> CBLCompiledMap
    /// The reduce function of a design document's view; throws a ``CBLDesignFunctionError`` (`.compilation`) naming what failed to compile.
    func compileDesignDocumentReduce(_ reduceSource: String, language: String, library: [String: Any]) throws -> CBLReduceBlock
    /// The name of the engine that runs the compiled functions (reported as CouchDB's
    /// `javascript_engine`); nil by default.
    var engineName: String? { get }
}

extension CBLViewCompiler {
    public var engineName: String? { nil }
}

/// Compiles the source of replication/changes filter functions, as 1.x's `CBLFilterCompiler`
/// did; register one with ``CBLDatabase/setFilterCompiler(_:)``.
public protocol CBLFilterCompiler: AnyObject, Sendable {
    /// A filter block running `filterSource`, or nil if the language is not this compiler's or the source does not compile.
    func compileFilterFunction(_ filterSource: String, language: String) -> CBLFilterBlock?
    /// The filter of a design document (the whole document reachable through `require`);
    /// throws a ``CBLDesignFunctionError`` (`.compilation`) naming what failed to compile.
    func compileDesignDocumentFilter(_ filterSource: String, language: String, designDocument: [String: Any]) throws -> CBLFilterBlock
    /// The design document's `validate_doc_update`, or nil if this compiler does not run validations.
    func compileValidateDocUpdate(_ source: String, language: String, designDocument: [String: Any]) throws -> CBLDesignValidation?
}

/// A map function that reads a document as JSON text and answers the rows it emitted as JSON
/// text: the path compiled views take, so that indexing never builds Swift dictionaries.
public protocol CBLJSONMapFunction: AnyObject, Sendable {
    /// Maps one document (`json`: its properties with `_id` and `_rev`). Returns the emitted rows
    /// as UTF-8 lines, each a JSON text ending in `\n`: key, value, key, value, … (`null` for no
    /// value); or nil when the function threw for this document (CouchDB skips it). Throws a `CBLError` when the function cannot run
    /// at all (time or memory limit exceeded): the index update then fails with that error.
    func map(json: UnsafeRawBufferPointer) throws -> [UInt8]?
}

/// A compiled map function: a block for the 1.x API, and the JSON fast path when the compiler has one.
// @unchecked because the 1.x `CBLMapBlock` type is not `@Sendable`; map functions must be pure (1.x's rule), and the indexer calls them from one thread at a time.
public struct CBLCompiledMap: @unchecked Sendable {
    /// The map block (what ``CBLViewCompiler/compileMapFunction(_:language:)`` answers).
    public let block: CBLMapBlock
    /// The JSON-text form the indexer prefers, if any.
    public let json: CBLJSONMapFunction?

    /// A compiled map from its block and optional JSON form.
    public init(block: @escaping CBLMapBlock, json: CBLJSONMapFunction? = nil) {
        self.block = block
        self.json = json
    }
}

/// A design document's `validate_doc_update(newDoc, oldDoc, userCtx, secObj)`: throws a
/// `CBLError` with status 403 (`forbidden`) or 401 (`unauthorized`) to refuse the write.
public typealias CBLDesignValidation = (_ newDoc: [String: Any], _ oldDoc: [String: Any]?,
                                        _ userCtx: [String: Any], _ secObj: [String: Any]) throws -> Void

extension CBLViewCompiler {
    public func compileDesignDocumentMap(_ mapSource: String, language: String, library: [String: Any]) throws -> CBLCompiledMap {
        guard let block = compileMapFunction(mapSource, language: language) else {
            throw CBLDesignFunctionError(.compilation, "Compilation of the map function failed (language '\(language)')")
        }
        return CBLCompiledMap(block: block)
    }

    public func compileDesignDocumentReduce(_ reduceSource: String, language: String, library: [String: Any]) throws -> CBLReduceBlock {
        guard let block = compileReduceFunction(reduceSource, language: language) else {
            throw CBLDesignFunctionError(.compilation, "Compilation of the reduce function failed (language '\(language)')")
        }
        return block
    }
}

extension CBLFilterCompiler {
    public func compileDesignDocumentFilter(_ filterSource: String, language: String, designDocument: [String: Any]) throws -> CBLFilterBlock {
        guard let block = compileFilterFunction(filterSource, language: language) else {
            throw CBLDesignFunctionError(.compilation, "Compilation of the filter function failed (language '\(language)')")
        }
        return block
    }

    public func compileValidateDocUpdate(_ source: String, language: String, designDocument: [String: Any]) throws -> CBLDesignValidation? {
        nil
    }
}

/// The compilers registered process-wide (1.x kept them in class variables too).
enum RegisteredCompilers {
    static let view = Locked<CBLViewCompiler?>(nil)
    static let filter = Locked<CBLFilterCompiler?>(nil)
}

extension CBLView {
    /// Registers the compiler design-document views (and the listener) compile map and reduce sources with.
    public static func setCompiler(_ compiler: CBLViewCompiler?) {
        RegisteredCompilers.view.withLock { $0 = compiler }
    }

    /// The registered view compiler, if any.
    public static func compiler() -> CBLViewCompiler? {
        RegisteredCompilers.view.withLock { $0 }
    }
}

extension CBLDatabase {
    /// Registers the compiler design-document filters (and validations) are compiled with.
    public static func setFilterCompiler(_ compiler: CBLFilterCompiler?) {
        RegisteredCompilers.filter.withLock { $0 = compiler }
    }

    /// The registered filter compiler, if any.
    public static func filterCompiler() -> CBLFilterCompiler? {
        RegisteredCompilers.filter.withLock { $0 }
    }
}
