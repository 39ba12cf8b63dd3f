import CJavaScriptCoreAPI
import CouchbaseLite

/// JavaScriptCore, the engine the JavaScript compilers run on, loaded at run time rather than
/// linked: a program needs Debian's `libjavascriptcoregtk-4.1-0` only to run design documents'
/// JavaScript, and without it compiling a function fails with CouchDB's `unknown_query_language`
/// naming that package, while databases and Swift views work as usual.
///
/// The library is loaded once, on the first JavaScript function compiled or the first question
/// asked here: `libjavascriptcoregtk-4.1.so.0`, else the older `libjavascriptcoregtk-4.0.so.18`. The
/// environment variable `CBL_JAVASCRIPTCORE_LOAD` names a file to load instead (and only it).
public enum CBLJSRuntime {
    /// The Debian package that provides JavaScriptCore.
    public static let debianPackage = "libjavascriptcoregtk-4.1-0"

    /// True when JavaScriptCore is loaded (it is loaded if it was not yet).
    public static var isAvailable: Bool { functions != nil }

    /// The name JavaScriptCore was loaded by: a soname such as `libjavascriptcoregtk-4.1.so.0`, or
    /// `CBL_JAVASCRIPTCORE_LOAD`'s value; nil when it is not available.
    public static var libraryName: String? {
        cjsc_api_library_name().map { String(cString: $0) }
    }

    /// The file JavaScriptCore was loaded from, as the dynamic loader found it; nil when it is not available.
    public static var libraryPath: String? {
        cjsc_api_library_path().map { String(cString: $0) }
    }

    /// Why JavaScript design-document functions cannot run, naming the package that enables them and
    /// the dynamic loader's reason; nil when they can.
    public static var unavailableReason: String? {
        guard functions == nil else { return nil }
        return "JavaScript design documents need JavaScriptCore at run time: install \(debianPackage) "
            + "(apt-get install \(debianPackage)); it could not be loaded: \(loadError ?? "")"
    }

    /// Why the library could not be loaded, in the dynamic loader's words for each name tried; nil when it was.
    package static var loadError: String? {
        functions == nil ? String(cString: cjsc_api_load_error()) : nil
    }

    /// JavaScriptCore's functions; nil when the library cannot be loaded. Each sandbox copies the
    /// table once, so a call through it costs one indirect call, as the linked library's did.
    static let functions: cjsc_api? = cjsc_api_load()?.pointee

    /// JavaScriptCore's functions, or `CBLDesignFunctionError(.noCompiler)` saying what to install.
    static func loadedFunctions() throws -> cjsc_api {
        guard let functions else {
            throw CBLDesignFunctionError(.noCompiler, unavailableReason ?? "JavaScriptCore could not be loaded")
        }
        return functions
    }
}
