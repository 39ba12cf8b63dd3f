/// The functions N1QL accepts, with their argument counts (spec 9.1 "functions"). A name not here is a
/// syntax error, as in LiteCore (`SELECT squee()`). MATCH, RANK, PREDICTION and META are parsed
/// separately: their first argument is a name, not an expression.
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

    static func arity(of lowercasedName: String) -> Arity? { table[lowercasedName] }

    private static let table: [String: Arity] = {
        var t: [String: Arity] = [:]
        func add(_ names: String, _ min: Int, _ max: Int?) {
            for name in names.split(separator: " ") { t[String(name)] = Arity(min: min, max: max) }
        }
        // Arrays.
        add("array_agg array_avg array_count array_ifnull array_length array_max array_min array_sum", 1, 1)
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
        // Aggregates.
        add("avg max min sum", 1, 1)
        add("count", 0, 1)
        // Vector search (EE in LiteCore); the optional arguments are metric, probes and accuracy.
        add("euclidean_distance cosine_distance", 2, 3)
        add("approx_vector_distance", 2, 5)
        return t
    }()
}
