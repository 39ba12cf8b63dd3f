import Foundation

/// Why a predicate format string was refused: the reason and where in the string.
public struct CBLPredicateError: Error, CustomStringConvertible, LocalizedError, Sendable {
    /// What is wrong.
    public let message: String
    /// The format string.
    public let format: String
    /// The UTF-8 offset in `format` where the problem is.
    public let offset: Int

    /// The message with the format and a marker at the offset.
    public var description: String {
        let prefix = String(decoding: format.utf8.prefix(offset), as: UTF8.self)
        let rest = String(decoding: format.utf8.dropFirst(offset), as: UTF8.self)
        return "Unable to parse the predicate format \"\(format)\" at offset \(offset) (\"\(prefix)⟨here⟩\(rest)\"): \(message)"
    }

    /// Same as ``description``.
    public var errorDescription: String? { description }
}

#if !canImport(ObjectiveC)
// Apple's Foundation has these initializers (and evaluates the full language): only Linux needs ours.
extension NSPredicate {
    /// A predicate from a format string, as 1.x apps wrote their `postFilter`s:
    /// `NSPredicate(format: "key2 CONTAINS[cd] %@", text)`.
    ///
    /// Linux Foundation declares `NSPredicate(format:)` unavailable; with `CouchbaseLite` imported
    /// this initializer is the one the compiler picks. It evaluates the subset of the predicate
    /// language apps use on query rows, documents, revisions, models and dictionaries:
    ///
    /// - key paths: `key`, `value`, `key0`…`key3`, `documentID`, `documentProperties.title`,
    ///   `value.address.city`, `SELF`, `%K` arguments, and the collection operators `@count`,
    ///   `@sum`, `@avg`, `@min`, `@max`;
    /// - comparisons `==` `=` `!=` `<>` `<` `<=` `>` `>=`, `BEGINSWITH`, `ENDSWITH`, `CONTAINS`,
    ///   `LIKE` (`*` and `?`), `MATCHES` (a regular expression matching the whole string), `IN`,
    ///   `BETWEEN`, each with the options `[c]` (case-insensitive), `[d]` (diacritic-insensitive)
    ///   or `[cd]`; `ANY`/`SOME`/`ALL`/`NONE` before a comparison on a collection;
    /// - `AND`/`&&`, `OR`/`||`, `NOT`/`!`, parentheses, `TRUEPREDICATE`, `FALSEPREDICATE`;
    /// - constants: quoted strings, numbers, `TRUE`/`YES`, `FALSE`/`NO`, `NULL`/`NIL`, `{a, b}`;
    /// - arguments `%@` (any value), `%K` (a key path), `%d` `%i` `%ld` `%u` (integers),
    ///   `%f` `%lf` `%g` (numbers), `%s` (a string).
    ///
    /// An ISO-8601 date string compares with a `Date` argument as a date. Anything else (`SUBQUERY`,
    /// `FUNCTION`, arithmetic, `$VARIABLES`, array indexes) is a programming error (an exception on
    /// Apple platforms). Here it does not stop the program: the error, naming the problem and its
    /// position, is logged as a warning (`CouchbaseLite.Query`) and the predicate matches nothing.
    /// Use ``NSPredicate/parse(format:_:)`` to get that as a thrown error instead.
    public convenience init(format predicateFormat: String, _ args: Any...) {
        self.init(format: predicateFormat, argumentArray: args)
    }

    /// A predicate from a format string and an array of arguments (see ``NSPredicate/init(format:_:)``).
    public convenience init(format predicateFormat: String, argumentArray arguments: [Any]?) {
        let predicate: PredicateNode
        do {
            predicate = try PredicateParser.parse(predicateFormat, arguments: arguments ?? [])
        } catch {
            CBLLog.warning("Query", "NSPredicate(format: \"\(predicateFormat)\"): \(error); it matches nothing")
            self.init(block: { _, _ in false })
            return
        }
        self.init(block: { object, _ in predicate.evaluate(with: object) })
    }
}
#endif

extension NSPredicate {
    /// Parses a predicate format string, throwing ``CBLPredicateError`` where
    /// ``NSPredicate/init(format:_:)`` would stop the program.
    public static func parse(format predicateFormat: String, _ args: Any...) throws -> NSPredicate {
        try parse(format: predicateFormat, argumentArray: args)
    }

    /// Parses a predicate format string with an array of arguments, throwing ``CBLPredicateError``.
    public static func parse(format predicateFormat: String, argumentArray arguments: [Any]?) throws -> NSPredicate {
        let predicate = try PredicateParser.parse(predicateFormat, arguments: arguments ?? [])
        return NSPredicate(block: { object, _ in predicate.evaluate(with: object) })
    }
}
