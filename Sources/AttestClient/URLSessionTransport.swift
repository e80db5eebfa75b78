import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The default `HTTPTransport`: `URLSession` (FoundationNetworking on Linux), waiting on a semaphore
/// for each answer. Call it off the main thread (the SDK's blocking calls document this).
///
/// Redirects are never followed: a `3xx` is returned as the answer (the SDK then treats it as a
/// failed exchange with its own endpoints), so evidence headers, `Authorization` and bodies never go
/// to another URL than the one the SDK signed for.
public final class URLSessionTransport: HTTPTransport, @unchecked Sendable {  // `session` is immutable and URLSession is thread-safe
    /// The session every request goes through.
    public let session: URLSession
    /// The delegate of a session this transport made (refuses redirects, collects answers); nil for a
    /// session the app gave.
    let exchanges: Exchanges?

    /// A transport over `session`. Default: an ephemeral session (no cookies, no cache) whose delegate
    /// refuses every redirect. A session you give keeps its own delegate: refuse redirects there
    /// (`urlSession(_:task:willPerformHTTPRedirection:newRequest:completionHandler:)` completing with
    /// nil); an answer that still comes from another origin than the request's is thrown away
    /// (`URLError(.badServerResponse)`).
    public init(session: URLSession? = nil) {
        if let session {
            self.session = session
            exchanges = nil
        } else {
            let configuration = URLSessionConfiguration.ephemeral
            configuration.httpCookieStorage = nil
            configuration.urlCache = nil
            configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
            let exchanges = Exchanges()
            self.session = URLSession(configuration: configuration, delegate: exchanges, delegateQueue: nil)
            self.exchanges = exchanges
        }
    }

    deinit {
        if exchanges != nil { session.finishTasksAndInvalidate() }  // a session retains its delegate until invalidated
    }

    /// One exchange.
    /// - Throws: the `URLError` of the session, `URLError(.timedOut)` when no answer came in time, or
    ///   `URLError(.badServerResponse)` when the answer came from another origin (a redirect followed
    ///   by a session the app gave).
    public func send(_ request: TransportRequest) throws -> TransportResponse {
        var urlRequest = URLRequest(url: request.url, timeoutInterval: request.timeout)
        urlRequest.httpMethod = request.method
        for header in request.headers { urlRequest.addValue(header.value, forHTTPHeaderField: header.name) }
        if !request.body.isEmpty || ["POST", "PUT", "PATCH"].contains(request.method) { urlRequest.httpBody = request.body }
        let exchange: Exchanges.Pending
        let task: URLSessionDataTask
        if let exchanges {
            // A delegate task: FoundationNetworking asks the delegate about redirects only for those.
            task = session.dataTask(with: urlRequest)
            exchange = exchanges.begin(task)
        } else {
            exchange = Exchanges.Pending()
            task = session.dataTask(with: urlRequest) { data, response, error in
                exchange.finish(response: response, data: data ?? Data(), error: error)
            }
        }
        task.resume()
        defer { exchanges?.end(task) }
        if exchange.done.wait(timeout: .now() + request.timeout + 5) == .timedOut {
            task.cancel()
            throw URLError(.timedOut)
        }
        let answer = try exchange.result.get()
        guard Self.sameOrigin(answer.url, request.url) else { throw URLError(.badServerResponse) }
        return answer.response
    }

    /// Whether `answered` (the URL the answer came from; nil: unknown, taken as the request's) has the
    /// scheme, host and port of `requested`.
    static func sameOrigin(_ answered: URL?, _ requested: URL) -> Bool {
        guard let answered else { return true }
        func port(_ url: URL) -> Int? { url.port ?? (url.scheme?.lowercased() == "https" ? 443 : url.scheme?.lowercased() == "http" ? 80 : nil) }
        return answered.scheme?.lowercased() == requested.scheme?.lowercased() && answered.host?.lowercased() == requested.host?.lowercased()
            && port(answered) == port(requested)
    }

    /// The delegate of the sessions this transport makes: refuses every redirect and collects each
    /// task's answer.
    final class Exchanges: NSObject, URLSessionDataDelegate, @unchecked Sendable {  // `pending` guarded by `lock`
        /// One task's answer, complete when `done` is signalled.
        final class Pending: @unchecked Sendable {  // written before `done.signal()`, read after `wait`
            let done = DispatchSemaphore(value: 0)
            var response: URLResponse?
            var data = Data()
            var result: Result<(response: TransportResponse, url: URL?), Error> = .failure(URLError(.timedOut))

            /// Completes the exchange.
            func finish(response: URLResponse?, data: Data, error: Error?) {
                if let http = response as? HTTPURLResponse {
                    var headers: [(name: String, value: String)] = []
                    for (name, value) in http.allHeaderFields {
                        if let name = name as? String, let value = value as? String { headers.append((name, value)) }
                    }
                    result = .success((TransportResponse(status: http.statusCode, headers: headers, body: data), http.url))
                } else {
                    result = .failure(error ?? URLError(.badServerResponse))
                }
                done.signal()
            }
        }

        private let lock = NSLock()
        private var pending: [Int: Pending] = [:]

        func begin(_ task: URLSessionTask) -> Pending {
            let exchange = Pending()
            lock.withLock { pending[task.taskIdentifier] = exchange }
            return exchange
        }

        func end(_ task: URLSessionTask) {
            _ = lock.withLock { pending.removeValue(forKey: task.taskIdentifier) }
        }

        private func exchange(_ task: URLSessionTask) -> Pending? { lock.withLock { pending[task.taskIdentifier] } }

        func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void) {
            completionHandler(nil)  // never follow: the 3xx is the answer
        }

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void) {
            exchange(dataTask)?.response = response
            completionHandler(.allow)
        }

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
            exchange(dataTask)?.data.append(data)
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
            guard let exchange = exchange(task) else { return }
            exchange.finish(response: exchange.response ?? task.response, data: exchange.data, error: error)
        }
    }
}
