import Foundation

extension CBLModel {
    /// The names of the attachments, including unsaved additions and without unsaved removals.
    public var attachmentNames: [String]? {
        let (document, changes) = state.withLock { ($0.document, $0.changedAttachments) }
        let saved = document?.currentRevision?.attachmentNames
        guard !changes.isEmpty else { return saved }
        var names = Set(saved ?? [])
        for (name, change) in changes {
            if change.attachment != nil { names.insert(name) } else { names.remove(name) }
        }
        return names.sorted()
    }

    /// The attachment with this name: an unsaved one set on the model, else the saved one.
    public func attachmentNamed(_ name: String) -> CBLAttachment? {
        let (document, change) = state.withLock { ($0.document, $0.changedAttachments[name]) }
        guard let document else { return nil }
        if let change {
            guard let pending = change.attachment else { return nil }
            return CBLAttachment(revision: document.newRevision(), name: name, pending: pending)
        }
        return document.currentRevision?.attachmentNamed(name)
    }

    /// Adds, replaces or (with nil content) removes an attachment; saved with the model.
    public func setAttachmentNamed(_ name: String, withContentType mimeType: String?, content: Data?) {
        changeAttachment(name, content.map { PendingAttachment(contentType: mimeType, body: .data($0)) })
    }

    /// Adds or replaces an attachment whose content is read from a file when the model is saved
    /// (keep the file until then); nil removes the attachment.
    public func setAttachmentNamed(_ name: String, withContentType mimeType: String?, contentURL fileURL: URL?) {
        changeAttachment(name, fileURL.map { PendingAttachment(contentType: mimeType, body: .file($0)) })
    }

    /// Removes an attachment when the model is saved (if it has one of that name).
    public func removeAttachmentNamed(_ name: String) {
        let (document, pending) = state.withLock { ($0.document, $0.changedAttachments[name] != nil) }
        guard pending || document?.currentRevision?.attachmentNamed(name) != nil else { return }
        changeAttachment(name, nil)
    }

    private func changeAttachment(_ name: String, _ attachment: PendingAttachment?) {
        state.withLock { s in
            s.changeCounter += 1
            s.changedAttachments[name] = (attachment, s.changeCounter)
        }
        markNeedsSave()
    }
}
