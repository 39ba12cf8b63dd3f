import BlobDigest
import Crypto
import Foundation
import JSONCore

/// Documents carried in multipart bodies (spec 9.4 "Multipart responses"): a `multipart/related`
/// document is its JSON part followed by one part per attachment marked `"follows": true`; a
/// `multipart/mixed` answer (`_bulk_get`, `open_revs`) is one part per revision, each either
/// such a `multipart/related` part or JSON alone. The listener reads uploads with it, the
/// replicator's pull the answers of its peers.
package enum MultipartDocument {
    /// One revision of a `multipart/mixed` answer.
    package enum Item {
        /// The document and its `follows` attachments' bodies by name (stored bytes: still
        /// gzip-compressed when the metadata says `"encoding":"gzip"`).
        case document(RelatedDocument)
        /// The peer's per-revision error (`{"id","rev","error","reason"[,"status"]}`, or CouchDB's
        /// `open_revs` `{"missing": rev}` turned into `not_found`).
        case peerError(JSONObject)
        /// A part this side cannot accept (digest mismatch, missing or corrupt body, bad JSON),
        /// with the revision it names when that could be read.
        case unreadable(docID: String?, revID: String?, MultipartError)
    }

    /// What a multipart answer answers, which says how its parts are read.
    package enum Answer {
        /// `_bulk_get` or `open_revs`: one revision per part, whatever the subtype (Sync
        /// Gateway and CouchDB say `multipart/mixed`, a 1.x listener asked for
        /// `multipart/related` says that).
        case revisions
        /// A single-revision `GET`: a `multipart/related` answer is the document itself (JSON,
        /// then attachments); a `multipart/mixed` one is read as `.revisions`.
        case document
    }

    /// The revisions of a multipart answer with this `Content-Type`.
    package static func items(body: [UInt8], contentType: String, answering answer: Answer = .revisions) throws -> [Item] {
        let parts = try MultipartReader.parts(of: body, contentType: contentType, depth: 1)
        if answer == .document, MIMEHeader.mediaType(contentType) == "multipart/related" {
            return [item(related: parts, headers: nil)]
        }
        return parts.map(item)
    }

    /// A document of a `multipart/related` body: its JSON part, read once, and the bodies of the
    /// attachments that `follow` it. The metadata of an attachment with a body here has no
    /// `follows` and no `digest` (the store computes its own from the bytes).
    package struct RelatedDocument: Sendable {
        package var json: JSONObject
        package var bodies: [String: Data]

        /// The document as the dictionary-based API spells it: each body as inline `data` (`Data`).
        package var foundation: [String: Any] {
            var doc = json.foundation
            guard !bodies.isEmpty, var attachments = doc["_attachments"] as? [String: Any] else { return doc }
            for (name, body) in bodies {
                guard var meta = attachments[name] as? [String: Any] else { continue }
                meta["data"] = body
                attachments[name] = meta
            }
            doc["_attachments"] = attachments
            return doc
        }

        /// The document as a revision to insert, bodies attached.
        package func revision() throws -> IncomingRevision {
            var revision = try IncomingRevision(json: json)
            for (name, body) in bodies { revision.attachments?[name]?.data = .bytes(body) }
            return revision
        }
    }

    /// One part of a `multipart/mixed` answer.
    package static func item(_ part: MIMEPart) -> Item {
        if let related = part.parts { return item(related: related, headers: part) }
        let object: JSONObject
        do {
            object = try json(part)
        } catch {
            return .unreadable(docID: part.header("x-doc-id"), revID: part.header("x-rev-id"), error)
        }
        if object["_id"]?.stringValue != nil { return item(related: [part], headers: part, parsed: object) }
        if let missing = object["missing"]?.stringValue {
            return .peerError(["rev": .string(missing), "error": "not_found", "reason": "missing"])
        }
        if object["error"] != nil { return .peerError(object) }
        return .unreadable(docID: part.header("x-doc-id"), revID: part.header("x-rev-id"),
                           MultipartError(.badContent, "A multipart answer part is neither a document nor an error"))
    }

    private static func item(related parts: [MIMEPart], headers: MIMEPart?, parsed: JSONObject? = nil) -> Item {
        var docID = headers?.header("x-doc-id")
        var revID = headers?.header("x-rev-id")
        do {
            guard let first = parts.first else { throw MultipartError(.malformed, "Empty multipart/related part") }
            var doc = RelatedDocument(json: try parsed ?? json(first), bodies: [:])
            docID = doc.json["_id"]?.stringValue ?? docID
            revID = doc.json["_rev"]?.stringValue ?? revID
            try attachFollowingBodies(&doc, parts: parts.dropFirst())
            return .document(doc)
        } catch let error as MultipartError {
            return .unreadable(docID: docID, revID: revID, error)
        } catch {
            return .unreadable(docID: docID, revID: revID, MultipartError(.badContent, "\(error)"))
        }
    }

    /// The document of a `multipart/related` body: the first part's JSON with the `follows`
    /// attachments' bodies as inline `data`. Throws ``MultipartError``.
    package static func document(related parts: [MIMEPart]) throws -> [String: Any] {
        guard let first = parts.first else { throw MultipartError(.malformed, "Empty multipart body") }
        var doc = RelatedDocument(json: try json(first), bodies: [:])
        try attachFollowingBodies(&doc, parts: parts.dropFirst())
        return doc.foundation
    }

    /// The document of a `multipart/related` body whose attachment parts were streamed into the
    /// blob store as they arrived (``SyncBlobDownload``): `installed[i]` is part `i`'s blob (its
    /// MIME body is then empty). Those attachments become `follows` entries naming their blob;
    /// the others are as ``document(related:)`` makes them.
    package static func document(related parts: [MIMEPart],
                                 installed: [Int: (digest: String, md5Digest: String, length: Int)]) throws -> [String: Any] {
        guard let first = parts.first else { throw MultipartError(.malformed, "Empty multipart body") }
        var doc = RelatedDocument(json: try json(first), bodies: [:])
        try attachFollowingBodies(&doc, parts: parts.dropFirst(), installed: installed)
        return doc.foundation
    }

    /// A JSON part's object (inflated first when the part is gzip-encoded, as Sync Gateway
    /// sends them to clients that accept gzip parts).
    static func json(_ part: MIMEPart) throws(MultipartError) -> JSONObject {
        var bytes = Array(part.body)
        if part.isGzipped {
            guard let inflated = try? Gzip.decompress(Data(bytes)) else {
                throw MultipartError(.badContent, "A gzip-encoded JSON part does not inflate")
            }
            bytes = Array(inflated)
        }
        do {
            return try JSON.object(bytes)
        } catch {
            throw MultipartError(.badContent, "A multipart JSON part is not a JSON object: \(error)")
        }
    }

    /// Gives each `follows` attachment its part: the one whose `Content-Disposition` filename
    /// names it, else the one whose digest matches, else the next unclaimed part in name order
    /// (the order writers use). A gzip part is inflated unless the metadata keeps the
    /// attachment encoded; the `digest` is checked against the bytes to store (or the bytes
    /// received: CouchDB's `md5-` covers the encoded form).
    static func attachFollowingBodies(_ doc: inout RelatedDocument, parts: ArraySlice<MIMEPart>,
                                      installed: [Int: (digest: String, md5Digest: String, length: Int)] = [:]) throws {
        guard case .object(var attachments)? = doc.json["_attachments"] else { return }
        let following = attachments.keys
            .filter { attachments[$0]?["follows"]?.boolValue == true }
            .sorted(by: JSON.utf16Precedes)
        guard !following.isEmpty else { return }
        let docName = doc.json["_id"]?.stringValue ?? "?"

        var claimed: [String: Int] = [:]
        var unnamed: [Int] = []
        for index in parts.indices {
            let part = parts[index]
            if let disposition = part.header("content-disposition"),
               let filename = MIMEHeader.parameter("filename", in: disposition),
               following.contains(filename), claimed[filename] == nil {
                claimed[filename] = index
            } else {
                unnamed.append(index)
            }
        }
        if !unnamed.isEmpty {
            var open = following.filter { claimed[$0] == nil }
            for part in unnamed {
                let digests = installed[part].map(Digests.init(known:)) ?? Digests(Data(parts[part].body))
                let byDigest = open.firstIndex { name in
                    attachments[name]?["digest"]?.stringValue.map(digests.matches) ?? false
                }
                guard let index = byDigest ?? (open.isEmpty ? nil : open.startIndex) else { break }
                claimed[open.remove(at: index)] = part
            }
        }

        for name in following {
            guard case .object(var meta)? = attachments[name] else { continue }
            guard let index = claimed[name] else {
                throw MultipartError(.missingAttachment, "The body of attachment '\(name)' of '\(docName)' is missing")
            }
            if let blob = installed[index] {
                // Stored as received (a gzip part is never streamed): CouchDB's `md5-` and 1.x's
                // `sha1-` both cover these bytes.
                if let digest = meta["digest"]?.stringValue, Digests.isChecked(digest), !Digests(known: blob).matches(digest) {
                    throw MultipartError(.digestMismatch, "The body of attachment '\(name)' of '\(docName)' does not match its digest \(digest)")
                }
                meta["follows"] = true
                meta["data"] = nil
                meta["digest"] = .string(blob.digest)
                if meta["encoding"]?.stringValue == "gzip" {
                    meta["encoded_length"] = .int(Int64(blob.length))
                } else {
                    meta["length"] = .int(Int64(blob.length))
                }
                attachments[name] = .object(meta)
                continue
            }
            let part = parts[index]
            let received = Data(part.body)
            var stored = received
            if part.isGzipped, meta["encoding"]?.stringValue != "gzip" {
                guard let inflated = try? Gzip.decompress(received) else {
                    throw MultipartError(.badContent, "The gzip body of attachment '\(name)' of '\(docName)' does not inflate")
                }
                stored = inflated
            }
            if let digest = meta["digest"]?.stringValue, Digests.isChecked(digest),
               !Digests(stored).matches(digest), stored == received || !Digests(received).matches(digest) {
                throw MultipartError(.digestMismatch, "The body of attachment '\(name)' of '\(docName)' does not match its digest \(digest)")
            }
            meta["follows"] = nil
            meta["digest"] = nil
            meta["data"] = nil
            attachments[name] = .object(meta)
            doc.bodies[name] = stored
        }
        doc.json["_attachments"] = .object(attachments)
    }
}

/// The SHA-1 (1.x, Sync Gateway) and MD5 (CouchDB) digests of some bytes, as metadata writes
/// them (`sha1-<base64>`, `md5-<base64>`), each computed once when first asked.
private final class Digests {
    private let data: Data
    private lazy var sha1 = SHA1BlobDigest.digest(forKey: Array(Insecure.SHA1.hash(data: data)))
    private lazy var md5 = "md5-" + Data(Insecure.MD5.hash(data: data)).base64EncodedString()

    init(_ data: Data) { self.data = data }

    /// The digests of a blob already installed (computed as it was written).
    init(known blob: (digest: String, md5Digest: String, length: Int)) {
        data = Data()
        sha1 = blob.digest
        md5 = blob.md5Digest
    }

    static func isChecked(_ digest: String) -> Bool { digest.hasPrefix(SHA1BlobDigest.prefix) || digest.hasPrefix("md5-") }

    func matches(_ digest: String) -> Bool {
        if digest.hasPrefix(SHA1BlobDigest.prefix) { return sha1 == digest }
        if digest.hasPrefix("md5-") { return md5 == digest }
        return false
    }
}
