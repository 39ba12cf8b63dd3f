import ArgumentParser
import CouchbaseLite
import CouchbaseLiteUpgrade

/// The 1.x view query options `cbl query` and `cbl compare` share, spelled as CBLQuery's
/// properties, and turned into the one `ViewQueryOptions` both the query and the comparison run with.
struct ViewQueryFlags: ParsableArguments {
    @Option(name: .customLong("key"), help: ArgumentHelp("Only rows with this key (JSON; repeatable: rows follow the keys' order).", valueName: "json"))
    var keys: [String] = []

    @Option(name: .customLong("start-key"), help: ArgumentHelp("First key (the last with --descending), JSON.", valueName: "json"))
    var startKey: String?

    @Option(name: .customLong("end-key"), help: ArgumentHelp("Last key (the first with --descending), JSON.", valueName: "json"))
    var endKey: String?

    @Option(name: .customLong("start-key-doc-id"), help: ArgumentHelp("Among rows whose key is --start-key, start at this document ID.", valueName: "id"))
    var startKeyDocID: String?

    @Option(name: .customLong("end-key-doc-id"), help: ArgumentHelp("Among rows whose key is --end-key, stop at this document ID.", valueName: "id"))
    var endKeyDocID: String?

    @Flag(inversion: .prefixedNo, help: "Include rows whose key equals --start-key.")
    var inclusiveStart = true

    @Flag(inversion: .prefixedNo, help: "Include rows whose key equals --end-key.")
    var inclusiveEnd = true

    @Flag(help: "Rows in descending key order.")
    var descending = false

    @Option(help: ArgumentHelp("At most this many rows (map rows, before any reduce).", valueName: "n"))
    var limit: UInt?

    @Option(help: ArgumentHelp("Skip this many rows first (map rows, before any reduce).", valueName: "n"))
    var skip: UInt = 0

    @Option(name: .customLong("prefix-match-level"), help: ArgumentHelp(
        "Match --end-key as a prefix: 1 = strings by prefix, arrays by their first elements; 2+ deeper.", valueName: "n"))
    var prefixMatchLevel: UInt = 0

    @Option(help: ArgumentHelp("Reduce the rows with a built-in reduce function.", valueName: "count|sum|stats"))
    var reduce: CBLBuiltinReducer?

    @Flag(name: .customLong("map-only"), help: "Map rows only: no reduce and no grouping (the default without --reduce).")
    var mapOnly = false

    @Flag(help: "Group rows by whole key (one row per distinct key).")
    var group = false

    @Option(name: .customLong("group-level"), help: ArgumentHelp("Group rows by the first N elements of array keys.", valueName: "n"))
    var groupLevel: UInt?

    /// Whether rows are reduced or grouped (else map rows).
    var reduces: Bool { !mapOnly && (reduce != nil || group || (groupLevel ?? 0) > 0) }

    func validateCombinations() throws {
        if mapOnly && (reduce != nil || group || groupLevel != nil) {
            throw ValidationError("--map-only excludes --reduce, --group and --group-level")
        }
        if group && groupLevel != nil {
            throw ValidationError("--group and --group-level exclude each other")
        }
    }

    /// The options, keys parsed as JSON.
    func viewOptions() throws -> ViewQueryOptions {
        var o = ViewQueryOptions()
        if !keys.isEmpty { o.keys = try keys.map { try parseJSONArgument($0, option: "--key") } }
        o.startKey = try startKey.map { try parseJSONArgument($0, option: "--start-key") }
        o.endKey = try endKey.map { try parseJSONArgument($0, option: "--end-key") }
        o.startKeyDocID = startKeyDocID
        o.endKeyDocID = endKeyDocID
        o.inclusiveStart = inclusiveStart
        o.inclusiveEnd = inclusiveEnd
        o.descending = descending
        o.limit = limit
        o.skip = skip
        o.prefixMatchLevel = prefixMatchLevel
        o.mapOnly = mapOnly
        o.reduce = reduce
        o.group = group
        o.groupLevel = groupLevel ?? 0
        return o
    }
}
