import Foundation
import JSONCore

/// Multipart answers to the pull's fetches (spec 9.4 "Multipart responses"): Sync Gateway
/// answers `_bulk_get` only as `multipart/mixed`, CouchDB 1.x (no `_bulk_get`) answers a
/// single-revision GET as `multipart/related` when attachments follow. Which form came back is
/// read from the answer's `Content-Type`, whatever was asked.
extension Puller {
    /// The fetches' `Accept`: JSON first, so CouchDB 2+/3 and our listener keep the JSON answer
    /// (they send multipart only to a client that does not accept JSON); `multipart/related`, as
    /// 1.x sends, for the peers that answer in it. `preferMultipart` asks for multipart alone.
    var fetchAccept: String {
        multipartMode ? "multipart/related" : "application/json, multipart/related"
    }

    /// Sync Gateway (or `preferMultipart`): revisions are fetched with their attachments as
    /// multipart parts, as 1.x fetched them from Sync Gateway. Otherwise they come with stubs
    /// and each attachment the local store lacks is streamed on its own (`downloadAttachments`).
    var multipartMode: Bool {
        tuning.preferMultipart || remote.isSyncGateway
    }

    /// 1.x accepts gzip-compressed parts (Sync Gateway then compresses compressible ones; a
    /// 1.x listener sends gzip-stored attachments as stored).
    static let fetchHeaders = [("X-Accept-Part-Encoding", "gzip")]

    /// The results for `batch` of a `multipart/…` `_bulk_get` answer; nil when the answer is
    /// not multipart. A body that cannot be read fails every revision of the batch (retried
    /// on the next run); a part that cannot be accepted fails its revision alone.
    static func multipartResults(_ response: RemoteResponse, for batch: [Wanted]) -> [FetchResult]? {
        guard let contentType = response.multipartContentType else { return nil }
        let items: [MultipartDocument.Item]
        do {
            items = try MultipartDocument.items(body: response.body, contentType: contentType)
        } catch {
            return batch.map { wanted in
                .failed(Replicator.documentError(502, wanted.docID, wanted.revID,
                                                 "unreadable multipart _bulk_get answer: \(error)"))
            }
        }
        var byKey: [String: FetchResult] = [:]
        func key(_ docID: String, _ revID: String) -> String { docID + "\u{0}" + revID }
        for item in items {
            switch item {
            case .document(let doc):
                guard let id = doc.json["_id"]?.stringValue, let rev = doc.json["_rev"]?.stringValue else { continue }
                byKey[key(id, rev)] = revision(doc, docID: id, revID: rev)
            case .peerError(let error):
                guard let rev = error["rev"]?.stringValue else { continue }
                // CouchDB's error parts may name the revision alone.
                let id = error["id"]?.stringValue ?? {
                    let candidates = batch.filter { $0.revID == rev && byKey[key($0.docID, rev)] == nil }
                    return candidates.count == 1 ? candidates[0].docID : nil
                }()
                guard let id else { continue }
                byKey[key(id, rev)] = failure(id, rev, BulkGetResult.Failure(json: error))
            case .unreadable(let id, let rev, let error):
                guard let id, let rev else { continue }
                byKey[key(id, rev)] = .failed(Replicator.documentError(502, id, rev, error.message))
            }
        }
        return batch.map { wanted in
            byKey[key(wanted.docID, wanted.revID)]
                ?? .failed(Replicator.documentError(502, wanted.docID, wanted.revID, "missing from the _bulk_get answer"))
        }
    }

    /// The result of a multipart answer to a single-revision GET (`multipart/related`, or an
    /// `open_revs`-style `multipart/mixed`); nil when the answer is not multipart.
    static func multipartResult(_ response: RemoteResponse, for wanted: Wanted) -> FetchResult? {
        guard let contentType = response.multipartContentType else { return nil }
        let items: [MultipartDocument.Item]
        do {
            items = try MultipartDocument.items(body: response.body, contentType: contentType, answering: .document)
        } catch {
            return .failed(Replicator.documentError(502, wanted.docID, wanted.revID, "unreadable multipart answer: \(error)"))
        }
        for item in items {
            switch item {
            case .document(var doc) where doc.json["_rev"]?.stringValue == wanted.revID:
                if doc.json["_id"] == nil { doc.json["_id"] = .string(wanted.docID) }
                return revision(doc, docID: wanted.docID, revID: wanted.revID)
            case .peerError(let error) where (error["rev"]?.stringValue ?? wanted.revID) == wanted.revID:
                return failure(wanted.docID, wanted.revID, BulkGetResult.Failure(json: error))
            case .unreadable(_, let rev, let error) where (rev ?? wanted.revID) == wanted.revID:
                return .failed(Replicator.documentError(502, wanted.docID, wanted.revID, error.message))
            default:
                continue
            }
        }
        return .failed(Replicator.documentError(502, wanted.docID, wanted.revID, "missing from the multipart answer"))
    }
}

extension RemoteResponse {
    /// The `Content-Type` when it is `multipart/…`.
    var multipartContentType: String? {
        guard let type = headers.first(name: "content-type"),
              MIMEHeader.mediaType(type).hasPrefix("multipart/") else { return nil }
        return type
    }
}
