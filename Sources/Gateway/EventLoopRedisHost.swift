import Dispatch
import GatewayHTTP
import GatewayRedis

/// One gateway event loop offered to the Redis store as the home of one of its connections: the
/// connection runs on the loop's queue, its socket sits in the loop's poller next to the client and
/// upstream sockets, and its commands of one batch are written at the loop's end of turn.
final class EventLoopRedisHost: RedisEventLoopHost, @unchecked Sendable {  // immutable; `loop` confines its own state to its queue
    private let loop: EventLoop

    init(_ loop: EventLoop) { self.loop = loop }

    var queue: DispatchQueue { loop.queue }

    func watch(fd: Int32, onReadable: @escaping () -> Void, onWritable: @escaping () -> Void) -> any RedisWatchedSocket {
        Watch(SocketChannel(fd: fd, loop: loop, onReadable: onReadable, onWritable: onWritable))
    }

    func atEndOfTurn(_ work: @escaping () -> Void) { loop.atEndOfTurn(work) }

    /// A Redis socket in the loop's poller.
    private final class Watch: RedisWatchedSocket {
        let channel: SocketChannel
        init(_ channel: SocketChannel) { self.channel = channel }
        func setReadInterest(_ on: Bool) { if on { channel.startReading() } else { channel.stopReading() } }
        func setWriteInterest(_ on: Bool) { if on { channel.armWrite() } else { channel.disarmWrite() } }
        func close() { channel.close() }
    }
}
