/// Writing N1QL text: property paths quoted where the grammar needs back-quotes.
package enum N1QLIdentifiers {
    /// `name.last` as N1QL: each component back-quoted when it is not a plain identifier or is a
    /// reserved word (`` `from`.x ``).
    package static func path(_ components: [String]) -> String {
        components.map(quoted).joined(separator: ".")
    }

    /// One identifier, back-quoted when needed.
    package static func quoted(_ name: String) -> String {
        let plain = name.first.map { $0 == "_" || ($0.isASCII && $0.isLetter) } == true
            && name.allSatisfy { $0 == "_" || ($0.isASCII && ($0.isLetter || $0.isNumber)) }
        if plain && !N1QLParserState.reserved.contains(name.uppercased()) { return name }
        return "`" + name.replacingOccurrences(of: "`", with: "``") + "`"
    }
}
