/// A value bound to, or read from, a statement.
package enum SQLiteValue: Sendable, Equatable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
}

extension SQLiteValue: ExpressibleByNilLiteral, ExpressibleByIntegerLiteral, ExpressibleByStringLiteral {
    package init(nilLiteral: ()) { self = .null }
    package init(integerLiteral value: Int64) { self = .integer(value) }
    package init(stringLiteral value: String) { self = .text(value) }
}
