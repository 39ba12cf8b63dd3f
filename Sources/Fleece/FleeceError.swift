/// An error thrown by the Fleece encoder or decoder.
///
/// Every problem with untrusted input surfaces as one of these values; the decoder never traps
/// on malformed data.
package enum FleeceError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The bytes are not valid Fleece (truncated, bad pointer, bad tag, unsorted dict, …).
    case invalidData(String)
    /// The JSON text given to the encoder is malformed; `offset` is the byte offset of the problem.
    case invalidJSON(String, offset: Int)
    /// A value cannot be represented in Fleece (NaN, infinity, `Date`, an unknown type, …).
    case unsupportedValue(String)
    /// The encoder was used out of order (a value where a key is required, an unbalanced
    /// `endArray`/`endDict`, no value or more than one value at the top level, …).
    case encodingMisuse(String)

    package var description: String {
        switch self {
        case .invalidData(let m): return "Invalid Fleece data: \(m)"
        case .invalidJSON(let m, let offset): return "Invalid JSON at byte \(offset): \(m)"
        case .unsupportedValue(let m): return "Value cannot be encoded as Fleece: \(m)"
        case .encodingMisuse(let m): return "Fleece encoder misuse: \(m)"
        }
    }
}
