import CJavaScriptCoreAPI
import CouchbaseLite
import Foundation
import Logging

/// Why a JavaScript call did not answer.
enum JSFailure: Error, CustomStringConvertible {
    /// The function threw (the exception, described).
    case threw(String)
    /// The watchdog stopped it: time or memory limit exceeded (the reason).
    case stopped(String)
    /// The input was not JSON, or the answer was not what the entry point returns.
    case internalError(String)

    var description: String {
        switch self {
        case .threw(let m): return m
        case .stopped(let m): return m
        case .internalError(let m): return m
        }
    }
}

/// One JavaScriptCore VM holding one compiled function: a plain global object (no file,
/// process or network API exists in it) with CouchDB's query-server globals. Calls are
/// serialised by a lock (a context is not reentrant) and each is bounded in time and memory
/// by JSC's watchdog.
// @unchecked because every use of the JS context (not reentrant, not thread-safe) is under `lock`.
final class JSSandbox: @unchecked Sendable {
    /// The entry points of ``JSPrelude``.
    enum EntryPoint: String, CaseIterable {
        case map = "__map", reduce = "__reduce", filter = "__filter", validate = "__validate"
    }

    private let lock = NSLock()
    /// JavaScriptCore's functions (``CBLJSRuntime``), copied in so a call costs no lookup.
    private let jsc: cjsc_api
    private let group: JSContextGroupRef
    private let context: JSGlobalContextRef
    private let watchdog: Watchdog
    private var entryPoints: [EntryPoint: JSObjectRef] = [:]
    private var describeFunction: JSObjectRef?
    /// NUL-terminated copy of a call's JSON argument (JSC reads C strings).
    private var scratch: [CChar] = []
    let limits: CBLJSLimits

    /// Compiles `source` (a function expression) with `root` reachable through `require`, on the
    /// loaded JavaScriptCore `jsc`; throws `JSFailure.threw` with CouchDB's wording when it does not compile.
    init(jsc: cjsc_api, source: String, root: [String: Any], limits: CBLJSLimits) throws {
        self.jsc = jsc
        self.limits = limits
        group = jsc.JSContextGroupCreate()
        context = jsc.JSGlobalContextCreateInGroup(group, nil)
        watchdog = Watchdog(jsc: jsc, group: group, limits: limits)
        jsc.JSContextGroupSetExecutionTimeLimit(group, Watchdog.tick, watchdogCallback, Unmanaged.passUnretained(watchdog).toOpaque())
        installLog()
        _ = try evaluate(JSPrelude.source)
        for entry in EntryPoint.allCases { entryPoints[entry] = try global(entry.rawValue) }
        describeFunction = try global("__describe")
        let args = try JSONBridge.text([source, root] as [Any])
        let compile = try global("__compile")
        if let message = try call(compile, json: args) {
            throw JSFailure.threw(String(decoding: message, as: UTF8.self))
        }
    }

    deinit {
        jsc.JSContextGroupClearExecutionTimeLimit(group)
        jsc.JSGlobalContextRelease(context)
        jsc.JSContextGroupRelease(group)
    }

    /// Calls an entry point with one JSON value; answers its JSON text, or nil for null.
    func call(_ entry: EntryPoint, json: UnsafeRawBufferPointer) throws -> [UInt8]? {
        lock.lock()
        defer { lock.unlock() }
        return try call(entryPoints[entry]!, json: json)   // kept: init fills every EntryPoint case
    }

    /// Same as ``call(_:json:)`` with the argument as bytes.
    func call(_ entry: EntryPoint, json: [UInt8]) throws -> [UInt8]? {
        try json.withUnsafeBytes { try call(entry, json: $0) }
    }

    // MARK: Internals (called holding the lock, or from init)

    private func call(_ function: JSObjectRef, json: [UInt8]) throws -> [UInt8]? {
        try json.withUnsafeBytes { try call(function, json: $0) }
    }

    private func call(_ function: JSObjectRef, json: UnsafeRawBufferPointer) throws -> [UInt8]? {
        if scratch.count < json.count + 1 { scratch = [CChar](repeating: 0, count: max(json.count + 1, scratch.count * 2)) }
        let text: JSStringRef = scratch.withUnsafeMutableBufferPointer { buffer in
            if json.count > 0 { memcpy(buffer.baseAddress!, json.baseAddress!, json.count) }
            buffer[json.count] = 0
            return jsc.JSStringCreateWithUTF8CString(buffer.baseAddress!)
        }
        defer { jsc.JSStringRelease(text) }
        guard let argument = jsc.JSValueMakeFromJSONString(context, text) else {
            throw JSFailure.internalError("the argument is not JSON")
        }
        var exception: JSValueRef?
        watchdog.begin()
        let result = withUnsafePointer(to: Optional(argument)) { arguments in
            jsc.JSObjectCallAsFunction(context, function, nil, 1, arguments, &exception)
        }
        let stopped = watchdog.end()
        if let stopped { throw JSFailure.stopped(stopped) }
        if let exception { throw JSFailure.threw(describe(exception)) }
        guard let result, !jsc.JSValueIsNull(context, result), !jsc.JSValueIsUndefined(context, result) else { return nil }
        return utf8(result)
    }

    private func describe(_ exception: JSValueRef) -> String {
        guard let describeFunction else { return utf8(exception).map { String(decoding: $0, as: UTF8.self) } ?? "exception" }
        var nested: JSValueRef?
        let text = withUnsafePointer(to: Optional(exception)) { arguments in
            jsc.JSObjectCallAsFunction(context, describeFunction, nil, 1, arguments, &nested)
        }
        return text.flatMap(utf8).map { String(decoding: $0, as: UTF8.self) } ?? "exception"
    }

    /// The value converted to a string, as UTF-8 bytes.
    private func utf8(_ value: JSValueRef) -> [UInt8]? {
        guard let string = jsc.JSValueToStringCopy(context, value, nil) else { return nil }
        defer { jsc.JSStringRelease(string) }
        let capacity = jsc.JSStringGetMaximumUTF8CStringSize(string)
        return [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count in
            let written = buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: capacity) {
                jsc.JSStringGetUTF8CString(string, $0, capacity)
            }
            count = max(0, written - 1)   // without the NUL
        }
    }

    private func evaluate(_ script: String) throws -> JSValueRef? {
        let text = jsc.JSStringCreateWithUTF8CString(script)
        defer { jsc.JSStringRelease(text) }
        var exception: JSValueRef?
        let result = jsc.JSEvaluateScript(context, text, nil, nil, 1, &exception)
        if let exception { throw JSFailure.threw(utf8(exception).map { String(decoding: $0, as: UTF8.self) } ?? "exception") }
        return result
    }

    private func global(_ name: String) throws -> JSObjectRef {
        let key = jsc.JSStringCreateWithUTF8CString(name)
        defer { jsc.JSStringRelease(key) }
        let value = jsc.JSObjectGetProperty(context, jsc.JSContextGetGlobalObject(context), key, nil)
        guard let value, jsc.JSValueIsObject(context, value), let object = jsc.JSValueToObject(context, value, nil) else {
            throw JSFailure.internalError("the prelude defines no \(name)")
        }
        return object
    }

    /// `__nativeLog(message)`: what `log()` writes ends up in the process log, as CouchDB's does.
    private func installLog() {
        let name = jsc.JSStringCreateWithUTF8CString("__nativeLog")
        defer { jsc.JSStringRelease(name) }
        let function = jsc.JSObjectMakeFunctionWithCallback(context, name) { context, _, _, count, arguments, _ in
            // A C callback captures nothing: the table again (loaded, since this context exists).
            guard let jsc = CBLJSRuntime.functions else { return nil }
            if count > 0, let arguments, let value = arguments[0], let string = jsc.JSValueToStringCopy(context, value, nil) {
                let capacity = jsc.JSStringGetMaximumUTF8CStringSize(string)
                var buffer = [CChar](repeating: 0, count: capacity)
                _ = jsc.JSStringGetUTF8CString(string, &buffer, capacity)
                jsc.JSStringRelease(string)
                let message = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                jsLogger.info("\(message)")
            }
            return jsc.JSValueMakeUndefined(context)
        }
        jsc.JSObjectSetProperty(context, jsc.JSContextGetGlobalObject(context), name, function, JSPropertyAttributes(kJSPropertyAttributeNone), nil)
    }
}

/// Where JavaScript's `log()` and the functions' failures are reported.
let jsLogger = Logger(label: "CouchbaseLiteJavaScript")

/// The time and memory a single call of a JavaScript function may take.
public struct CBLJSLimits: Sendable {
    /// Seconds a call may run (CouchDB's `os_process_timeout` is 5 s).
    public var timeLimit: TimeInterval
    /// Bytes the process's resident memory may grow by during a call.
    public var memoryLimit: Int

    /// Limits with CouchDB's defaults: 5 s, and 256 MiB of memory growth.
    public init(timeLimit: TimeInterval = 5, memoryLimit: Int = 256 << 20) {
        self.timeLimit = timeLimit
        self.memoryLimit = memoryLimit
    }
}
