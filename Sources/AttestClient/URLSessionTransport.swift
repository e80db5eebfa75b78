import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The default `HTTPTransport`: `URLSession` (FoundationNetworking on Linux), waiting on a semaphore
/// for each answer. Call it off the main thread (the SDK's blocking calls document this).
public final class URLSessionTransport: HTTPTransport, @unchecked Sendable {  // `session` is immutable and URLSession is thread-safe
    /// The session every request goes through.
    public let session: URLSession

    /// A transport over `session` (default: an ephemeral session, no cookies, no cache).
    public init(session: URLSession? = nil) {
        if let session {
            self.session = session
        } else {
            let configuration = URLSessionConfiguration.ephemeral
            configuration.httpCookieStorage = nil
            configuration.urlCache = nil
            configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
            self.session = URLSession(configuration: configuration)
        }
    }

    /// One exchange.
    /// - Throws: the `URLError` of the session, or `URLError(.timedOut)` when no answer came in time.
    public func send(_ request: TransportRequest) throws -> TransportResponse {
        var urlRequest = URLRequest(url: request.url, timeoutInterval: request.timeout)
        urlRequest.httpMethod = request.method
        for header in request.headers { urlRequest.addValue(header.value, forHTTPHeaderField: header.name) }
        if !request.body.isEmpty || ["POST", "PUT", "PATCH"].contains(request.method) { urlRequest.httpBody = request.body }
        final class Box: @unchecked Sendable {  // written once by the completion handler before `done.signal()`, read after `wait`
            var result: Result<TransportResponse, Error> = .failure(URLError(.timedOut))
        }
        let box = Box()
        let done = DispatchSemaphore(value: 0)
        let task = session.dataTask(with: urlRequest) { data, response, error in
            if let http = response as? HTTPURLResponse {
                var headers: [(name: String, value: String)] = []
                for (name, value) in http.allHeaderFields {
                    if let name = name as? String, let value = value as? String { headers.append((name, value)) }
                }
                box.result = .success(TransportResponse(status: http.statusCode, headers: headers, body: data ?? Data()))
            } else {
                box.result = .failure(error ?? URLError(.badServerResponse))
            }
            done.signal()
        }
        task.resume()
        if done.wait(timeout: .now() + request.timeout + 5) == .timedOut {
            task.cancel()
            throw URLError(.timedOut)
        }
        return try box.result.get()
    }
}
