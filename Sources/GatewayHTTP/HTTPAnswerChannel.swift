// The one-shot answer slot of one request, under its HTTPResponder.

import Synchronization

/// One request's answer slot: the first answer goes to the connection, later ones are ignored; if
/// the slot is released unanswered, the connection gets `handlerDidNotRespond` (a handler bug must
/// not hang the connection). What an `HTTPResponder` wraps, whatever its context type.
@usableFromInline
final class HTTPAnswerChannel: Sendable {
    private let sink: any HTTPResponseSink
    private let sequence: UInt64
    private let answered = Atomic<Bool>(false)

    init(sink: any HTTPResponseSink, sequence: UInt64) {
        self.sink = sink
        self.sequence = sequence
    }

    /// Delivers `answer` (with `context`, boxed, to replace the request's) if it is the first.
    /// - Returns: false when the slot had already been answered.
    @usableFromInline
    func answer(_ answer: consuming HTTPAnswer, context: HTTPContextBox?) -> Bool {
        guard answered.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return false }
        sink.deliver(consume answer, context: context, sequence: sequence)
        return true
    }

    deinit {
        if !answered.load(ordering: .acquiring) {
            sink.deliver(.error(.handlerDidNotRespond), context: nil, sequence: sequence)
        }
    }
}
