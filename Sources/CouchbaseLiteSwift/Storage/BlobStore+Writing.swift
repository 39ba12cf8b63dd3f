import Foundation

extension BlobStore {
    /// Writes `data` into the store under its SHA-1 key (spec 1.1) unless already there; returns the key.
    @discardableResult
    package func store(_ data: Data) throws -> [UInt8] {
        let key = SHA1Digest.hash(data)
        let destination = url(forKey: key)
        let fm = FileManager.default
        if fm.fileExists(atPath: destination.path) { return key }
        try fm.createDirectory(at: directory, withIntermediateDirectories: true)
        let temp = directory.appendingPathComponent(".tmp-\(UUID().uuidString)")
        do {
            try data.write(to: temp)
            try fm.moveItem(at: temp, to: destination)
        } catch {
            try? fm.removeItem(at: temp)
            if fm.fileExists(atPath: destination.path) { return key }   // another writer installed it
            if CouchbaseLiteError.isOutOfSpace(error) { throw CouchbaseLiteError.diskFull("writing blob \(Self.fileName(forKey: key))") }
            throw CouchbaseLiteError(.ioError, "Cannot write blob \(Self.fileName(forKey: key)): \(error)")
        }
        return key
    }
}
