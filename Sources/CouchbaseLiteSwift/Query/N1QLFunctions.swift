/// Every N1QL function, one row each (spec 9.1 "functions"; LiteCore's `kFunctionList`): its
/// argument counts, whether it aggregates, how it is written in SQL and, for the library ones,
/// its Swift implementation (``N1QLFunctionTable``). The parser and the translator both read it:
/// a name not here is a syntax error, as in LiteCore (`SELECT squee()`). MATCH, RANK, PREDICTION
/// and META are parsed separately: their first argument is a name, not an expression.
enum N1QLFunctions {
    struct Arity: Sendable {
        let min: Int
        let max: Int?   // nil: any number

        func accepts(_ n: Int) -> Bool { n >= min && (max.map { n <= $0 } ?? true) }

        var text: String {
            switch max {
            case nil: return "at least \(min)"
            case min?: return "\(min)"
            case let m?: return "\(min) to \(m)"
            }
        }
    }

    /// How a call is written in SQL.
    enum Writer: Sendable {
        /// `n1ql_<name>(args…)`: the Swift implementation registered as an SQL function.
        case library
        /// An SQL aggregate (SQLite's own, or one registered under that name).
        case aggregate(String)
        /// Accepted by the parser, not run by this engine yet (`.unimplemented`).
        case unsupported
    }

    struct Row: Sendable {
        let arity: Arity
        let writer: Writer

        var isAggregate: Bool {
            if case .aggregate = writer { return true }
            return false
        }

        /// The function's Swift implementation (library functions only).
        func implementation(_ name: String) -> N1QLFunctionTable.Function? {
            guard case .library = writer else { return nil }
            return N1QLFunctionTable.functions[name]
        }
    }

    static func row(_ lowercasedName: String) -> Row? { table[lowercasedName] }

    static func arity(of lowercasedName: String) -> Arity? { table[lowercasedName]?.arity }

    /// Every function name, sorted.
    static var names: [String] { table.keys.sorted() }

    private static let table: [String: Row] = {
        var t: [String: Row] = [:]
        func add(_ names: String, _ min: Int, _ max: Int?, _ writer: Writer = .library) {
            for name in names.split(separator: " ") { t[String(name)] = Row(arity: Arity(min: min, max: max), writer: writer) }
        }
        // Aggregates (`count(*)` is written `count(*)` by the translator).
        add("count", 0, 1, .aggregate("count"))
        add("sum", 1, 1, .aggregate("sum"))
        add("avg", 1, 1, .aggregate("avg"))
        add("min", 1, 1, .aggregate("min"))
        add("max", 1, 1, .aggregate("max"))
        add("array_agg", 1, 1, .aggregate("n1ql_array_agg"))
        // Arrays.
        add("array_avg array_count array_ifnull array_length array_max array_min array_sum", 1, 1)
        add("array_contains", 2, 2)
        add("array_of", 0, nil)
        // Comparison / conditional.
        add("greatest least ifmissing ifnull ifmissingornull", 2, nil)
        add("missingif nullif", 2, 2)
        // Dates (3.x signatures; spec 9.1 notes older releases took fewer arguments).
        add("millis_to_str millis_to_utc str_to_utc", 1, 2)
        add("millis_to_tz str_to_tz", 2, 3)
        add("str_to_millis", 1, 1)
        add("date_diff_str date_diff_millis date_add_millis", 3, 3)
        add("date_add_str", 3, 4)
        // Math.
        add("abs acos asin atan ceil cos degrees exp floor ln log radians sign sin sqrt tan", 1, 1)
        add("atan2 power div idiv", 2, 2)
        add("e pi", 0, 0)
        add("round round_even trunc", 1, 2)
        // Patterns and strings.
        add("regexp_contains regexp_like regexp_position contains", 2, 2)
        add("regexp_replace", 3, nil)
        add("length lower upper", 1, 1)
        add("ltrim rtrim trim", 1, 2)
        add("concat", 2, nil)
        // Types.
        add("isarray is_array isatom is_atom isboolean is_boolean isnumber is_number isobject is_object"
            + " isstring is_string type typename", 1, 1)
        add("toarray to_array toatom to_atom toboolean to_boolean tonumber to_number toobject to_object"
            + " tostring to_string", 1, 1)
        // Vector search (EE in LiteCore); the optional arguments are metric, probes and accuracy.
        add("euclidean_distance cosine_distance", 2, 3, .unsupported)
        add("approx_vector_distance", 2, 5, .unsupported)
        add("prediction", 2, 3, .unsupported)
        return t
    }()
}
