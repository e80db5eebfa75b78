import Foundation
import XCTest
@testable import GatewayConfig

/// Layer 3: first match in order, segment-boundary prefixes, exact paths, methods, shadowing.
final class RouteTableTests: XCTestCase {
    private func route(_ match: RouteConfiguration.PathMatch, _ methods: [String] = [], mode: RouteConfiguration.Mode = .enforce) -> RouteConfiguration {
        RouteConfiguration(name: match.description, match: match, methods: methods, upstream: "app", mode: mode)
    }

    func testPrefixMatchesOnSegmentBoundaries() {
        let table = RouteTable(routes: [route(.prefix("/v1/purchases"))])
        XCTAssertEqual(table.match(method: "POST", path: "/v1/purchases"), 0)
        XCTAssertEqual(table.match(method: "POST", path: "/v1/purchases/"), 0)
        XCTAssertEqual(table.match(method: "POST", path: "/v1/purchases/42"), 0)
        XCTAssertEqual(table.match(method: "POST", path: "/v1/purchases?x=1"), 0)
        XCTAssertNil(table.match(method: "POST", path: "/v1/purchasesX"))
        XCTAssertNil(table.match(method: "POST", path: "/v1/purchase"))
        XCTAssertNil(table.match(method: "POST", path: "/v1"))
        XCTAssertNil(table.match(method: "POST", path: "/V1/purchases"))  // case-sensitive
        XCTAssertNil(table.match(method: "POST", path: ""))
    }

    func testRootPrefixMatchesEverything() {
        let table = RouteTable(routes: [route(.prefix("/"))])
        for path in ["/", "/a", "/a/b/c", "/?q", "*"] {
            XCTAssertEqual(table.match(method: "GET", path: path), 0, path)
        }
    }

    func testExactPath() {
        let table = RouteTable(routes: [route(.exact("/healthz"))])
        XCTAssertEqual(table.match(method: "GET", path: "/healthz"), 0)
        XCTAssertEqual(table.match(method: "GET", path: "/healthz?verbose"), 0)
        XCTAssertNil(table.match(method: "GET", path: "/healthz/"))
        XCTAssertNil(table.match(method: "GET", path: "/healthz/x"))
        XCTAssertNil(table.match(method: "GET", path: "/health"))
    }

    func testMethodsFallThroughAndFirstMatchWins() {
        let table = RouteTable(routes: [
            route(.prefix("/v1/purchases"), ["POST"]),
            route(.prefix("/v1"), ["GET", "HEAD"], mode: .monitor),
            route(.exact("/v1/purchases/report")),  // after a prefix that takes it for POST only
            route(.prefix("/"), mode: .off),
        ])
        XCTAssertEqual(table.match(method: "POST", path: "/v1/purchases/1"), 0)
        XCTAssertEqual(table.match(method: "GET", path: "/v1/purchases/1"), 1)   // falls through the POST-only route
        XCTAssertEqual(table.match(method: "PUT", path: "/v1/purchases/1"), 3)
        XCTAssertEqual(table.match(method: "PUT", path: "/v1/purchases/report"), 2)
        XCTAssertEqual(table.match(method: "POST", path: "/v1/purchases/report"), 0) // first match, not most specific
        XCTAssertEqual(table.match(method: "post", path: "/v1/purchases"), 3)      // methods are case-sensitive
        XCTAssertEqual(table.match(method: "GET", path: "/other"), 3)
        XCTAssertEqual(table.route(method: "GET", path: "/v1/x")?.mode, .monitor)
    }

    func testNoRouteMeansNil() {
        let table = RouteTable(routes: [route(.prefix("/api"), ["POST"])])
        XCTAssertNil(table.match(method: "GET", path: "/api"))
        XCTAssertNil(table.match(method: "POST", path: "/"))
    }

    func testMatchingOnRawBytes() {
        let table = RouteTable(routes: [route(.prefix("/v1/purchases"), ["POST"]), route(.prefix("/"))])
        let request = Array("POST /v1/purchases/9?a=b HTTP/1.1".utf8)
        request.withUnsafeBytes { raw in
            let method = UnsafeRawBufferPointer(rebasing: raw[0..<4])
            let target = UnsafeRawBufferPointer(rebasing: raw[5..<24])
            XCTAssertEqual(table.match(method: method, path: target), 0)
            XCTAssertEqual(table.match(method: UnsafeRawBufferPointer(rebasing: raw[0..<3]), path: target), 1)  // "POS"
        }
    }

    func testShadowedRoutes() {
        let table = RouteTable(routes: [
            route(.prefix("/v1")),                              // 0: every method
            route(.prefix("/v1/purchases"), ["POST"]),          // 1: under 0 -> shadowed
            route(.exact("/v1")),                               // 2: shadowed by 0
            route(.prefix("/v2"), ["POST"]),                    // 3
            route(.prefix("/v2"), ["GET"]),                     // 4
            route(.exact("/v2/x"), ["GET", "POST"]),            // 5: shadowed by 3 and 4 together
            route(.prefix("/v2"), ["GET", "PUT"]),              // 6: PUT still reaches it
            route(.prefix("/v2x")),                             // 7: not under /v2 (segment boundary)
            route(.prefix("/")),                                // 8
            route(.exact("/")),                                 // 9: shadowed by 8
        ])
        XCTAssertEqual(table.shadowedRoutes(), [
            RouteTable.Shadowing(route: 1, by: [0]),
            RouteTable.Shadowing(route: 2, by: [0]),
            RouteTable.Shadowing(route: 5, by: [3, 4]),
            RouteTable.Shadowing(route: 9, by: [8]),
        ])
        XCTAssertTrue(RouteTable(routes: [route(.exact("/a")), route(.prefix("/a"))]).shadowedRoutes().isEmpty)
    }

    func testShadowedRouteWarningInConfiguration() {
        let loaded = loadOK(ConfigTestHelpers.minimal(routes: """
        routes:
          - path_prefix: /
            upstream: app
          - path_prefix: /v1/purchases
            methods: [POST]
            upstream: app
        """))
        XCTAssertEqual(loaded?.warnings.first { $0.path == "routes[1]" }?.description,
                       "routes[1]: this route can never match: every request it takes is taken first by routes[0] (routes match in order, first match wins) (line 10, column 5)")
    }

    func testHeadFallThroughWarning() {
        let loaded = loadOK(ConfigTestHelpers.minimal(routes: """
        routes:
          - path_prefix: /v1/account
            methods: [GET]
            upstream: app
          - path_prefix: /
            upstream: app
            mode: off
        """))
        XCTAssertEqual(loaded?.warnings.first { $0.path == "routes[0].methods" }?.description,
                       "routes[0].methods: takes GET but not HEAD: HEAD /v1/account falls through to routes[1] (mode off); add HEAD if the upstream answers HEAD like GET (line 9, column 14)")
        let withHead = loadOK(ConfigTestHelpers.minimal(routes: """
        routes:
          - path_prefix: /v1/account
            methods: [GET, HEAD]
            upstream: app
          - path_prefix: /
            upstream: app
            mode: off
        """))
        XCTAssertNil(withHead?.warnings.first { $0.path == "routes[0].methods" })
    }

    /// A realistic table (30 protected prefixes, then a catch-all): a request none of the 30 takes
    /// falls through to the last route, whatever its path below a protected prefix's sibling. (This was
    /// a timing figure inside `swift test`; speed is measured by `bench/run`, not by the suite.)
    func testFallThroughToCatchAllOnARealisticTable() {
        var routes: [RouteConfiguration] = []
        for i in 0..<30 { routes.append(route(.prefix("/api/v1/resource\(i)"), ["POST", "PUT"])) }
        routes.append(route(.prefix("/"), mode: .off))
        let table = RouteTable(routes: routes)
        for i in 0..<8 {
            XCTAssertEqual(table.match(method: "GET", path: "/api/v1/resource29/items/\(i)"), 30)
            XCTAssertEqual(table.match(method: "POST", path: "/api/v1/resource\(i)/items"), i)
        }
    }
}

extension RouteTableTests {
    func testEndpointsOwnTheirPrefixOnSegmentBoundaries() {
        let endpoints = EndpointsConfiguration()
        func owns(_ path: String) -> Bool {
            var p = path
            let bytes = p.withUTF8 { endpoints.owns(path: UnsafeRawBufferPointer($0)) }
            XCTAssertEqual(bytes, endpoints.owns(path: path.split(separator: "?").first.map(String.init) ?? path), path)
            return bytes
        }
        XCTAssertTrue(owns("/app-attest/v1/challenge"))
        XCTAssertTrue(owns("/app-attest/v1/attest?x"))
        XCTAssertTrue(owns("/app-attest/v1"))
        XCTAssertFalse(owns("/app-attest/v10"))
        XCTAssertFalse(owns("/app-attest"))
        XCTAssertFalse(owns("/"))
    }

    func testOwnHeaderFamilyIsCaseInsensitive() {
        let headers = HeadersConfiguration()
        func own(_ name: String) -> Bool {
            var n = name
            let bytes = n.withUTF8 { headers.isOwnHeader(name: UnsafeRawBufferPointer($0)) }
            XCTAssertEqual(bytes, headers.isOwnHeader(name), name)
            return bytes
        }
        XCTAssertTrue(own("App-Attest-Verdict"))
        XCTAssertTrue(own("app-attest-verdict"))
        XCTAssertTrue(own("APP-ATTEST-X"))
        XCTAssertTrue(own("App-Attest-"))
        XCTAssertFalse(own("App-Attest"))
        XCTAssertFalse(own("X-App-Attest-Verdict"))
        XCTAssertFalse(own("Authorization"))
    }
}
