import CouchbaseLite
import Foundation

/// Compiles JavaScript map and reduce functions with CouchDB's query-server semantics (`emit`,
/// `log`, `sum`, `toJSON`, `isArray`, `require` of the design document's `views.lib`), as 1.x's
/// `CBLJSViewCompiler` did: register it with `CBLView.setCompiler(CBLJSViewCompiler())`.
// @unchecked because NSObject subclasses are not checked; its fields are lets of Sendable or lock-guarded types.
public final class CBLJSViewCompiler: NSObject, CBLViewCompiler, @unchecked Sendable {
    /// The limits every call of a compiled function runs under.
    public let limits: CBLJSLimits
    private let failures = FailureCounter()

    /// A compiler whose functions run under `limits` (CouchDB's defaults: 5 s per call).
    public init(limits: CBLJSLimits = CBLJSLimits()) {
        self.limits = limits
    }

    /// The engine the functions run on (CouchDB's `_node/_local/_versions` `javascript_engine`).
    public var engineName: String? { "javascriptcore" }

    /// How many documents this compiler's map functions threw on (each was skipped).
    public var mapFailureCount: Int { failures.value }

    public func compileMapFunction(_ mapSource: String, language: String) -> CBLMapBlock? {
        (try? compileDesignDocumentMap(mapSource, language: language, library: [:]))?.block
    }

    public func compileReduceFunction(_ reduceSource: String, language: String) -> CBLReduceBlock? {
        try? compileDesignDocumentReduce(reduceSource, language: language, library: [:])
    }

    public func compileDesignDocumentMap(_ mapSource: String, language: String, library: [String: Any]) throws -> CBLCompiledMap {
        let sandbox = try Self.sandbox(mapSource, language: language, root: ["views": ["lib": library]], what: "map", limits: limits)
        let function = JSMapFunction(sandbox: sandbox, failures: failures)
        return CBLCompiledMap(block: function.block, json: function)
    }

    public func compileDesignDocumentReduce(_ reduceSource: String, language: String, library: [String: Any]) throws -> CBLReduceBlock {
        let sandbox = try Self.sandbox(reduceSource, language: language, root: ["views": ["lib": library]], what: "reduce", limits: limits)
        return { keys, values, rereduce in
            do {
                let arguments = try JSONBridge.text([keys, values, rereduce] as [Any])
                guard let result = try sandbox.call(.reduce, json: arguments) else { return NSNull() }
                // CouchDB's reduce_limit: an output over 4 KiB that is more than half the size of its input.
                if result.count > Self.reduceLimitBytes && result.count * 2 > arguments.count {
                    return CBLReduceFailure(error: CBLDesignFunctionError(.reduceOverflow,
                        "Reduce output must shrink more rapidly: input size: \(arguments.count) output size: \(result.count)"))
                }
                return try JSONBridge.parse(result)
            } catch JSFailure.stopped(let reason) {
                return CBLReduceFailure(error: CBLDesignFunctionError(.stopped, "The reduce function was stopped: \(reason)"))
            } catch {
                return CBLReduceFailure(error: CBLError(500, "The reduce function failed: \(error)"))
            }
        }
    }

    /// The size a reduce's output may reach before it must be smaller than half its input
    /// (CouchDB's query server, `reduce_limit = true`).
    static let reduceLimitBytes = 4096

    /// A sandbox holding the compiled `source`; throws CouchDB-worded errors.
    static func sandbox(_ source: String, language: String, root: [String: Any], what: String,
                        limits: CBLJSLimits) throws -> JSSandbox {
        guard language == "javascript" else {
            throw CBLError(501, "The \(what) function is written in '\(language)'; only JavaScript is supported")
        }
        // Without JavaScriptCore no query server exists: CouchDB's unknown_query_language, naming the package.
        let jsc = try CBLJSRuntime.loadedFunctions()
        do {
            return try JSSandbox(jsc: jsc, source: source, root: root, limits: limits)
        } catch JSFailure.threw(let reason) {
            // Only the source's own syntax or evaluation error is CouchDB's compilation_error.
            throw CBLDesignFunctionError(.compilation, "Compilation of the \(what) function failed: \(reason)")
        } catch {
            throw CBLError(500, "Compilation of the \(what) function failed: \(error)")
        }
    }
}
