import Fleece
import SQLiteKit

/// The SQL functions queries are translated to (spec 9.3), registered on a DataFile's
/// connection, one family per file: Fleece access (`fl_value`, `fl_each`, … in C, CFleeceSQL),
/// collections (`fl_contains`, `fl_dict`, `fl_array`), the N1QL library (`n1ql_*`), full text,
/// collations. They read Fleece bodies in place; nothing builds `[String: Any]` per row.
enum QueryFunctions {
    /// Registers the functions, once per connection (the connection remembers it: no catalog
    /// query per compile).
    static func register(on file: DataFile) throws {
        try register(on: file.connection) { [unowned file] in file.sharedKeys }
    }

    /// Registers the functions on `connection` (e.g. a reader of the file), reading integer dict
    /// keys with the file's current `sharedKeys`; once per connection.
    static func register(on connection: SQLiteConnection, sharedKeys: @escaping () -> SharedKeys) throws {
        try connection.once("QueryFunctions") {
            let lookup = FleecePathLookup(decoder: FleeceBodyDecoder(sharedKeys: sharedKeys))
            try registerFleeceAccess(on: connection, sharedKeys: sharedKeys, lookup: lookup)
            try registerCollections(on: connection, lookup: lookup)
            try registerN1QL(on: connection, decoder: lookup.decoder)
            try registerFullText(on: connection, lookup: lookup.lookup)
        }
    }
}

/// Finds the value a property path names in a function's Fleece argument, for the functions
/// written in Swift (and the cases the C functions hand back).
// @unchecked because one lookup belongs to one connection's SQL functions, which SQLite runs on the thread using that connection.
final class FleecePathLookup: @unchecked Sendable {
    let decoder: FleeceBodyDecoder
    private var paths: [String: CompiledPropertyPath] = [:]

    init(decoder: FleeceBodyDecoder) { self.decoder = decoder }

    /// Argument `i` as a compiled path: kept by SQLite with the call site while the argument
    /// is a constant (the usual case: one parse per query run), else from `paths`. `r` must be
    /// nil in a call a C function handed over: the call site's auxdata is the C function's.
    func path(_ a: SQLiteArguments, _ i: Int, _ r: SQLiteFunctionResult?) -> CompiledPropertyPath? {
        // Only `path` stores objects with these functions' arguments: no dynamic cast needed.
        if let r, let p = r.auxiliaryObject(forArgument: Int32(i)) { return unsafeDowncast(p, to: CompiledPropertyPath.self) }
        guard let s = a.string(i), let compiled = path(s) else { return nil }
        r?.setAuxiliaryObject(compiled, forArgument: Int32(i))
        return compiled
    }

    /// The compiled form of path text `s` (nil if it does not parse).
    func path(_ s: String) -> CompiledPropertyPath? {
        if let p = paths[s] { return p }
        guard let parsed = try? PropertyPath(parsing: s) else { return nil }
        let compiled = CompiledPropertyPath(parsed)
        paths[s] = compiled
        return compiled
    }

    /// The Fleece value at argument 1's path under argument 0 (a body or a collection).
    func lookup(_ a: SQLiteArguments, _ r: SQLiteFunctionResult?) -> FleeceValue? {
        guard a.storageClass(0) == .blob, a.subtype(0) != QueryValue.nullSubtype,
              let p = path(a, 1, r) else { return nil }
        return a.withBlob(0) { decoder.root(of: $0) }.flatMap { p.evaluate($0) }
    }
}
