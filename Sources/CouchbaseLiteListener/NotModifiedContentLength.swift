import NIOCore
import NIOHTTP1

/// CouchDB answers `304 Not Modified` with `Content-Length: 0`, but SwiftNIO's HTTP/1 encoder
/// removes framing headers from every 304 (RFC 9112 allows either) and Hummingbird offers no
/// encoder option. Added through Hummingbird's `additionalChannelHandlers` (so only to HTTP
/// connections, never WebSocket ones), this handler places a watcher just above the encoder,
/// which counts the 304 heads going in, and a writer just below it, which appends the header to
/// that many encoded heads. All three run on the channel's event loop.
final class NotModifiedContentLength: ChannelInboundHandler, RemovableChannelHandler {
    // NIO requires a direction; reads pass through untouched (never unwrapped).
    typealias InboundIn = NIOAny

    func handlerAdded(context: ChannelHandlerContext) {
        let pipeline = context.pipeline.syncOperations
        guard let encoder = try? pipeline.handler(type: HTTPResponseEncoder.self) else { return }
        let writer = NotModifiedLengthWriter()
        try? pipeline.addHandler(writer, position: .before(encoder))
        try? pipeline.addHandler(NotModifiedHeadWatcher(writer: writer), position: .after(encoder))
    }
}

/// Counts the 304 heads the encoder is given (see ``NotModifiedContentLength``).
final class NotModifiedHeadWatcher: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let writer: NotModifiedLengthWriter

    init(writer: NotModifiedLengthWriter) {
        self.writer = writer
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .head(let head) = unwrapOutboundIn(data), head.status == .notModified {
            writer.pending += 1
        }
        context.write(data, promise: promise)
    }
}

/// Appends `Content-Length: 0` to the next `pending` encoded response heads.
final class NotModifiedLengthWriter: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    var pending = 0
    private static let startLine = Array("HTTP/1.1 304 ".utf8)
    private static let blankLine = Array("\r\n\r\n".utf8)

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard pending > 0, case .byteBuffer(var buffer) = unwrapOutboundIn(data) else {
            context.write(data, promise: promise)
            return
        }
        pending -= 1
        // The encoder writes a head as one buffer: start line, headers, blank line.
        let bytes = buffer.readableBytesView
        guard bytes.starts(with: Self.startLine), bytes.count >= 4, bytes.suffix(4).elementsEqual(Self.blankLine) else {
            context.write(data, promise: promise)
            return
        }
        buffer.moveWriterIndex(to: buffer.writerIndex - 2)
        buffer.writeString("Content-Length: 0\r\n\r\n")
        context.write(wrapOutboundOut(.byteBuffer(buffer)), promise: promise)
    }
}
