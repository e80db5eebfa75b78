import Foundation

/// One protected request of a stream and what became of it.
struct StreamedRequest {
    let device: Int
    /// nil when the challenge request itself was refused.
    let request: SignedRequest?
    let challengeStatus: Int
    let status: Int
    let when: Date
}

/// Sends protected requests (challenge, then the signed request) round-robin from `devices` on a
/// background thread until stopped: the "steady stream of valid requests" of the scale-out tests.
final class RequestStream: @unchecked Sendable {  // `log`, `counters` and `stopped` guarded by `lock`
    private let client: ClusterGatewayEnvironment
    private let devices: [ClientDevice]
    private let lock = NSLock()
    private var log: [StreamedRequest] = []
    private var counters: [UInt32]
    private var stopped = false
    private let finished = DispatchSemaphore(value: 0)

    init(_ client: ClusterGatewayEnvironment, devices: [ClientDevice], firstCounter: UInt32 = 1) {
        self.client = client
        self.devices = devices
        counters = Array(repeating: firstCounter, count: devices.count)
        let count = devices.count
        Thread.detachNewThread { [self] in
            var index = 0
            while !isStopped {
                step(index % count)
                index += 1
            }
            finished.signal()
        }
    }

    private var isStopped: Bool { lock.lock(); defer { lock.unlock() }; return stopped }

    private func step(_ index: Int) {
        let device = devices[index]
        lock.lock()
        let counter = counters[index]
        counters[index] += 1
        lock.unlock()
        var entry = StreamedRequest(device: index, request: nil, challengeStatus: 0, status: 0, when: Date())
        do {
            let reply = try client.requestChallenge(keyId: device.keyId, purpose: "assert")
            if reply.status == 201, let challenge = reply.json["challenge"] as? String {
                let request = try client.signedRequest(device, target: "/v1/protected/stream", body: Array("n=\(counter)".utf8),
                                                       counter: counter, challenge: challenge)
                let answer = try client.send(request)
                entry = StreamedRequest(device: index, request: request, challengeStatus: reply.status, status: answer.status, when: Date())
            } else {
                entry = StreamedRequest(device: index, request: nil, challengeStatus: reply.status, status: 0, when: Date())
            }
        } catch {
            entry = StreamedRequest(device: index, request: nil, challengeStatus: -1, status: -1, when: Date())
        }
        lock.lock()
        log.append(entry)
        lock.unlock()
    }

    /// The requests so far.
    var requests: [StreamedRequest] { lock.lock(); defer { lock.unlock() }; return log }

    /// Stops and waits for the request in flight (at most 30 s).
    func stop() {
        lock.lock()
        stopped = true
        lock.unlock()
        _ = finished.wait(timeout: .now() + 30)
    }
}
