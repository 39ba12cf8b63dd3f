import JSONCore

/// Aggregate, math, string and date functions (2.x `Function`).
public final class Function {
    private init() {}

    private static func call(_ name: String, _ args: ExpressionProtocol...) -> ExpressionProtocol {
        QueryExpression(.operation(name + "()", args.map(\.node)))
    }

    // Aggregates
    /// The average of the values in the group.
    public static func avg(_ expression: ExpressionProtocol) -> ExpressionProtocol { call("AVG", expression) }
    /// The number of values in the group (`count(Expression.all())` counts rows).
    public static func count(_ expression: ExpressionProtocol) -> ExpressionProtocol { call("COUNT", expression) }
    /// The smallest value in the group.
    public static func min(_ expression: ExpressionProtocol) -> ExpressionProtocol { call("MIN", expression) }
    /// The largest value in the group.
    public static func max(_ expression: ExpressionProtocol) -> ExpressionProtocol { call("MAX", expression) }
    /// The sum of the values in the group.
    public static func sum(_ expression: ExpressionProtocol) -> ExpressionProtocol { call("SUM", expression) }

    // Math
    /// Absolute value.
    public static func abs(_ expression: ExpressionProtocol) -> ExpressionProtocol { call("ABS", expression) }
    /// Arc cosine.
    public static func acos(_ expression: ExpressionProtocol) -> ExpressionProtocol { call("ACOS", expression) }
    /// Arc sine.
    public static func asin(_ expression: ExpressionProtocol) -> ExpressionProtocol { call("ASIN", expression) }
    /// Arc tangent.
    public static func atan(_ expression: ExpressionProtocol) -> ExpressionProtocol { call("ATAN", expression) }
    /// Arc tangent of y/x.
    public static func atan2(y: ExpressionProtocol, x: ExpressionProtocol) -> ExpressionProtocol { call("ATAN2", y, x) }
    /// Smallest integer not less than the value.
    public static func ceil(_ expression: ExpressionProtocol) -> ExpressionProtocol { call("CEIL", expression) }
    /// Cosine.
    public static func cos(_ expression: ExpressionProtocol) -> ExpressionProtocol { call("COS", expression) }
    /// Radians to degrees.
    public static func degrees(_ expression: ExpressionProtocol) -> ExpressionProtocol { call("DEGREES", expression) }
    /// Euler's number.
    public static func e() -> ExpressionProtocol { call("E") }
    /// e to the power of the value.
    public static func exp(_ expression: ExpressionProtocol) -> ExpressionProtocol { call("EXP", expression) }
    /// Largest integer not greater than the value.
    public static func floor(_ expression: ExpressionProtocol) -> ExpressionProtocol { call("FLOOR", expression) }
    /// Natural logarithm.
    public static func ln(_ expression: ExpressionProtocol) -> ExpressionProtocol { call("LN", expression) }
    /// Base-10 logarithm.
    public static func log(_ expression: ExpressionProtocol) -> ExpressionProtocol { call("LOG", expression) }
    /// Pi.
    public static func pi() -> ExpressionProtocol { call("PI") }
    /// `base` to the power `exponent`.
    public static func power(base: ExpressionProtocol, exponent: ExpressionProtocol) -> ExpressionProtocol { call("POWER", base, exponent) }
    /// Degrees to radians.
    public static func radians(_ expression: ExpressionProtocol) -> ExpressionProtocol { call("RADIANS", expression) }
    /// Rounded to an integer.
    public static func round(_ expression: ExpressionProtocol) -> ExpressionProtocol { call("ROUND", expression) }
    /// Rounded to `digits` decimal places.
    public static func round(_ expression: ExpressionProtocol, digits: ExpressionProtocol) -> ExpressionProtocol { call("ROUND", expression, digits) }
    /// -1, 0 or 1.
    public static func sign(_ expression: ExpressionProtocol) -> ExpressionProtocol { call("SIGN", expression) }
    /// Sine.
    public static func sin(_ expression: ExpressionProtocol) -> ExpressionProtocol { call("SIN", expression) }
    /// Square root.
    public static func sqrt(_ expression: ExpressionProtocol) -> ExpressionProtocol { call("SQRT", expression) }
    /// Tangent.
    public static func tan(_ expression: ExpressionProtocol) -> ExpressionProtocol { call("TAN", expression) }
    /// Truncated to an integer.
    public static func trunc(_ expression: ExpressionProtocol) -> ExpressionProtocol { call("TRUNC", expression) }
    /// Truncated to `digits` decimal places.
    public static func trunc(_ expression: ExpressionProtocol, digits: ExpressionProtocol) -> ExpressionProtocol { call("TRUNC", expression, digits) }

    // Strings
    /// Whether the string contains `substring` (case-sensitive unless collated).
    public static func contains(_ expression: ExpressionProtocol, substring: ExpressionProtocol) -> ExpressionProtocol { call("CONTAINS", expression, substring) }
    /// The string's length in characters.
    public static func length(_ expression: ExpressionProtocol) -> ExpressionProtocol { call("LENGTH", expression) }
    /// Lowercased.
    public static func lower(_ expression: ExpressionProtocol) -> ExpressionProtocol { call("LOWER", expression) }
    /// Leading whitespace removed.
    public static func ltrim(_ expression: ExpressionProtocol) -> ExpressionProtocol { call("LTRIM", expression) }
    /// Trailing whitespace removed.
    public static func rtrim(_ expression: ExpressionProtocol) -> ExpressionProtocol { call("RTRIM", expression) }
    /// Leading and trailing whitespace removed.
    public static func trim(_ expression: ExpressionProtocol) -> ExpressionProtocol { call("TRIM", expression) }
    /// Uppercased.
    public static func upper(_ expression: ExpressionProtocol) -> ExpressionProtocol { call("UPPER", expression) }

    // Dates
    /// An ISO-8601 date string as milliseconds since 1970.
    public static func stringToMillis(_ expression: ExpressionProtocol) -> ExpressionProtocol { call("STR_TO_MILLIS", expression) }
    /// An ISO-8601 date string converted to UTC.
    public static func stringToUTC(_ expression: ExpressionProtocol) -> ExpressionProtocol { call("STR_TO_UTC", expression) }
    /// Milliseconds since 1970 as a local ISO-8601 string.
    public static func millisToString(_ expression: ExpressionProtocol) -> ExpressionProtocol { call("MILLIS_TO_STR", expression) }
    /// Milliseconds since 1970 as a UTC ISO-8601 string.
    public static func millisToUTC(_ expression: ExpressionProtocol) -> ExpressionProtocol { call("MILLIS_TO_UTC", expression) }
}
