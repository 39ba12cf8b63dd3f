import Foundation

extension Result {
    /// The row decoded as `T` (3.2.3 `Result.data(as:dataKey:)`), straight from its column values.
    /// Without `dataKey` the columns are the properties (`SELECT meta().id AS id, title FROM …`);
    /// with it, the dictionary in that column is (`SELECT meta().id AS id, * AS data FROM …`,
    /// `dataKey: "data"`). A `@DocumentID` property takes the row's column of the same name and
    /// no revision: saving the model later saves over the revision current then.
    /// Throws `DecodingError` when the row does not fit `T`.
    public func data<T: Decodable>(as type: T.Type, dataKey: String? = nil) throws -> T {
        try DocumentDecoder.decode(T.self, from: self, dataKey: dataKey)
    }
}

extension ResultSet {
    /// The rows not yet iterated, each decoded as `T` (see ``Result/data(as:dataKey:)``).
    /// Holds every model in memory at once: iterate the rows instead for large results.
    public func data<T: Decodable>(as type: T.Type, dataKey: String? = nil) throws -> [T] {
        try allResults().map { try $0.data(as: T.self, dataKey: dataKey) }
    }
}
