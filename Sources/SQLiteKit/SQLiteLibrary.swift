import CSQLite
import CSQLiteAPI

/// The SQLite library a connection runs on: the system's libsqlite3 (every unencrypted database),
/// or SQLCipher, which 1.x used for encrypted databases, loaded at run time with its symbols kept
/// local (`RTLD_LOCAL | RTLD_DEEPBIND`) because it exports the same `sqlite3_*` names. See `CSQLiteAPI.h`.
// @unchecked because `api` points at a static, never-freed table of C function pointers.
package struct SQLiteLibrary: @unchecked Sendable, Equatable {
    let api: UnsafePointer<csqlite_api>

    /// The system SQLite the package links.
    package static let system = SQLiteLibrary(api: csqlite_system_api())

    /// SQLCipher (Debian's `libsqlcipher0`), loaded on first use; throws ``SQLCipherUnavailable``
    /// with the reason when it is not installed or not usable.
    package static func sqlCipher() throws -> SQLiteLibrary {
        var message = [CChar](repeating: 0, count: 512)
        guard let api = csqlite_sqlcipher_api(&message, message.count) else {
            throw SQLCipherUnavailable(message: String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return SQLiteLibrary(api: api)
    }

    /// True when SQLCipher can be loaded.
    package static var isSQLCipherAvailable: Bool { csqlite_sqlcipher_api(nil, 0) != nil }

    /// True for SQLCipher.
    package var isSQLCipher: Bool { api.pointee.is_sqlcipher != 0 }

    package static func == (a: SQLiteLibrary, b: SQLiteLibrary) -> Bool { a.api == b.api }

    /// The tables C callbacks use: a callback receives only SQLite's context, so each library
    /// registers its own thunk, which names its table here.
    nonisolated(unsafe) static let callbackSystemAPI: UnsafePointer<csqlite_api> = csqlite_system_api()
    static var callbackSQLCipherAPI: UnsafePointer<csqlite_api> {
        // Only thunks registered on a SQLCipher connection read this, so the library is loaded.
        csqlite_sqlcipher_api(nil, 0)!
    }
}

/// SQLCipher (needed for an encrypted database) is not installed or cannot be loaded.
package struct SQLCipherUnavailable: Error, CustomStringConvertible, Sendable {
    /// Why, from the dynamic loader.
    package let message: String
    package var description: String { message }
}

/// Whether SQLCipher, which encrypted databases need (Debian's `libsqlcipher0`), can be loaded: what
/// `cbl doctor` reports.
package struct SQLCipherStatus: Sendable {
    /// The Debian package that provides SQLCipher.
    package static let debianPackage = "libsqlcipher0"
    /// The name it was loaded by (`libsqlcipher.so.0`, or `CBL_SQLCIPHER_LIBRARY`'s value); nil when not loaded.
    package let libraryName: String?
    /// The file the dynamic loader found; nil when not loaded or unknown.
    package let libraryPath: String?
    /// Why it cannot be loaded, in the dynamic loader's words; nil when it is loaded.
    package let cause: String?

    /// Where SQLCipher was loaded from, or why it cannot be (loading it if not yet tried).
    package static var current: SQLCipherStatus {
        guard let name = csqlite_sqlcipher_library_name() else {
            return SQLCipherStatus(libraryName: nil, libraryPath: nil, cause: String(cString: csqlite_sqlcipher_load_cause()))
        }
        return SQLCipherStatus(libraryName: String(cString: name),
                               libraryPath: csqlite_sqlcipher_library_path().map { String(cString: $0) }, cause: nil)
    }
}
