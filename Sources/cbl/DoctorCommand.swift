import ArgumentParser
import CouchbaseLite
import CouchbaseLiteJavaScript

/// `cbl doctor`: which optional libraries, loaded at run time, this machine has.
struct Doctor: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show which optional run-time libraries are installed and what each enables.",
        discussion: """
            Prints one line per library the package loads only when needed: JavaScriptCore \
            (JavaScript design documents: views, filters, validate_doc_update; Debian: \
            \(CBLJSRuntime.debianPackage)) and SQLCipher (encrypted databases; Debian: \
            \(SQLCipherStatus.debianPackage)): the name and file it was loaded from, or why it \
            could not be and the package to install.

            EXAMPLES:
              cbl doctor

            EXIT STATUS: 0, whether the libraries are installed or not.
            """)

    func run() throws {
        print(Self.javaScriptCoreLine())
        print(Self.sqlCipherLine())
    }

    static func javaScriptCoreLine() -> String {
        if let name = CBLJSRuntime.libraryName {
            return "JavaScriptCore: found \(name)\(CBLJSRuntime.libraryPath.map { " at \($0)" } ?? ""); JavaScript design documents run"
        }
        return "JavaScriptCore: not found; install \(CBLJSRuntime.debianPackage) to run JavaScript design documents "
            + "(\(CBLJSRuntime.loadError ?? "not loaded"))"
    }

    static func sqlCipherLine() -> String {
        let status = SQLCipherStatus.current
        if let name = status.libraryName {
            return "SQLCipher: found \(name)\(status.libraryPath.map { " at \($0)" } ?? ""); encrypted databases open"
        }
        return "SQLCipher: not found; install \(SQLCipherStatus.debianPackage) to open encrypted databases "
            + "(\(status.cause ?? "not loaded"))"
    }
}
