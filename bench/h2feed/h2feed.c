/*
 * h2feed: HTTP/2-over-TLS load client for bench/run's `h2-enforced` figure: sends prepared App Attest
 * requests, each exactly once, multiplexed like h2load (-c connections, -m streams in flight on each).
 *
 * h2load sends the same headers on every request; an enforced request needs its own one-time
 * challenge and assertion, so this client takes them from the files `attestctl bench-prepare
 * assertions` writes (one line per request: keyId TAB challenge TAB assertion, base64) and puts them
 * in App-Attest-Key-Id / App-Attest-Challenge / App-Attest-Assertion. The partitions are interleaved
 * line by line, which keeps each key's requests in the order they were minted (each partition holds
 * its own keys). Framing and HPACK are nghttp2's, TLS is OpenSSL's (ALPN h2, no certificate check:
 * loopback benchmark). The three evidence fields are sent never-indexed (RFC 7541 section 6.2.3):
 * each value is used once, so indexing them would only churn both dynamic tables.
 *
 * usage: h2feed -h HOST -p PORT -c CONNS -m STREAMS -d SECONDS --path PATH [--method M] [--wrap] FEED...
 * Prints one line `BENCH_JSON {...}` in the shape of bench/wrk/feed.lua's (requests, duration_us,
 * errors, latency_us percentiles, used, pool, ran_out). A request counts when its stream closed
 * within the duration; latency is from submitting the request to the stream's close. Responses
 * other than 2xx count as `status` errors, reset streams as `read` errors. When the feed runs out
 * (without --wrap) the last request is sent again (the gateway refuses it: the run fails loudly)
 * and ran_out is true.
 *
 * Build: cc -O2 -o h2feed h2feed.c -lnghttp2 -lssl -lcrypto
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct { char *key, *challenge, *assertion; size_t klen, clen, alen; } request_t;

typedef struct {
    int fd;
    SSL *ssl;
    nghttp2_session *session;
    int inflight;
    int dead;
    uint8_t *out;         /* frames from nghttp2 not yet taken by SSL_write: out[outOffset..<outLength] */
    size_t outOffset, outLength, outCapacity;
} conn_t;

typedef struct { uint64_t start; int status; } stream_t;

static request_t *requests;
static size_t requestCount, nextRequest;
static int wrapFeed, ranOut;
static const char *method = "GET", *path = "/", *host = "127.0.0.1";
static char authority[300];
static uint32_t *latencies;
static size_t latencyCount, latencyCapacity;
static long completed, statusErrors, readErrors, writeErrors, connectErrors;
static uint64_t bytesReceived, deadline;

static uint64_t nowMicros(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void die(const char *what) {
    fprintf(stderr, "h2feed: %s\n", what);
    exit(2);
}

/* Reads the partitions and interleaves them line by line. */
static void loadFeeds(char **files, int count) {
    char **lines[64];
    size_t counts[64];
    if (count > 64) die("at most 64 feed files");
    size_t total = 0;
    for (int f = 0; f < count; f++) {
        FILE *in = fopen(files[f], "r");
        if (!in) { perror(files[f]); exit(2); }
        size_t cap = 1024, n = 0;
        lines[f] = malloc(cap * sizeof(char *));
        char *line = NULL;
        size_t lineCap = 0;
        ssize_t len;
        while ((len = getline(&line, &lineCap, in)) > 0) {
            while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
            if (len == 0) continue;
            if (n == cap) { cap *= 2; lines[f] = realloc(lines[f], cap * sizeof(char *)); }
            lines[f][n++] = strdup(line);
        }
        free(line);
        fclose(in);
        counts[f] = n;
        total += n;
    }
    requests = calloc(total ? total : 1, sizeof(request_t));
    for (size_t i = 0;; i++) {
        int any = 0;
        for (int f = 0; f < count; f++) {
            if (i >= counts[f]) continue;
            any = 1;
            char *k = lines[f][i], *c = strchr(k, '\t'), *a = c ? strchr(c + 1, '\t') : NULL;
            if (!c || !a) die("feed line is not keyId TAB challenge TAB assertion");
            *c++ = 0;
            *a++ = 0;
            requests[requestCount++] = (request_t){k, c, a, strlen(k), strlen(c), strlen(a)};
        }
        if (!any) break;
    }
    if (requestCount == 0) die("no prepared requests in the feed");
}

static void recordLatency(uint64_t micros) {
    if (latencyCount == latencyCapacity) {
        latencyCapacity = latencyCapacity ? latencyCapacity * 2 : 65536;
        latencies = realloc(latencies, latencyCapacity * sizeof(uint32_t));
    }
    latencies[latencyCount++] = micros > UINT32_MAX ? UINT32_MAX : (uint32_t)micros;
}

static int onHeader(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name, size_t namelen,
                    const uint8_t *value, size_t valuelen, uint8_t flags, void *user) {
    (void)flags; (void)user;
    if (frame->hd.type != NGHTTP2_HEADERS || namelen != 7 || memcmp(name, ":status", 7) != 0) return 0;
    stream_t *s = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    if (s && valuelen == 3) s->status = (value[0] - '0') * 100 + (value[1] - '0') * 10 + (value[2] - '0');
    return 0;
}

static int onData(nghttp2_session *session, uint8_t flags, int32_t id, const uint8_t *data, size_t len, void *user) {
    (void)session; (void)flags; (void)id; (void)data; (void)user;
    bytesReceived += len;
    return 0;
}

static int onClose(nghttp2_session *session, int32_t id, uint32_t error, void *user) {
    conn_t *c = user;
    stream_t *s = nghttp2_session_get_stream_user_data(session, id);
    if (!s) return 0;
    c->inflight--;
    uint64_t now = nowMicros();
    if (now <= deadline) {
        if (error != NGHTTP2_NO_ERROR) readErrors++;
        else {
            completed++;
            if (s->status < 200 || s->status > 299) statusErrors++;
            recordLatency(now - s->start);
        }
    }
    nghttp2_session_set_stream_user_data(session, id, NULL);
    free(s);
    return 0;
}

#define NV(n, v, vl, f) {(uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, (vl), (f)}

static void submit(conn_t *c) {
    size_t index = nextRequest++;
    if (index >= requestCount) {
        if (wrapFeed) index %= requestCount;
        else { index = requestCount - 1; ranOut = 1; }
    }
    request_t *r = &requests[index];
    nghttp2_nv headers[] = {
        NV(":method", method, strlen(method), NGHTTP2_NV_FLAG_NONE),
        NV(":scheme", "https", 5, NGHTTP2_NV_FLAG_NONE),
        NV(":authority", authority, strlen(authority), NGHTTP2_NV_FLAG_NONE),
        NV(":path", path, strlen(path), NGHTTP2_NV_FLAG_NONE),
        NV("user-agent", "h2feed", 6, NGHTTP2_NV_FLAG_NONE),
        NV("app-attest-key-id", r->key, r->klen, NGHTTP2_NV_FLAG_NO_INDEX),
        NV("app-attest-challenge", r->challenge, r->clen, NGHTTP2_NV_FLAG_NO_INDEX),
        NV("app-attest-assertion", r->assertion, r->alen, NGHTTP2_NV_FLAG_NO_INDEX),
    };
    stream_t *s = malloc(sizeof(stream_t));
    s->start = nowMicros();
    s->status = 0;
    if (nghttp2_submit_request(c->session, NULL, headers, sizeof(headers) / sizeof(headers[0]), NULL, s) < 0) {
        free(s);
        c->dead = 1;
        writeErrors++;
        return;
    }
    c->inflight++;
}

/* Sends what nghttp2 has queued, through TLS, until the socket would block. Partial writes are on
 * and the buffer may move: a retried SSL_write gets the same prefix, at least as long (SSL_write(3)). */
static void flush(conn_t *c) {
    for (;;) {
        for (;;) {
            const uint8_t *data;
            ssize_t len = nghttp2_session_mem_send(c->session, &data);
            if (len < 0) { c->dead = 1; writeErrors++; return; }
            if (len == 0) break;
            if (c->outLength + (size_t)len > c->outCapacity) {
                c->outCapacity = (c->outLength + (size_t)len) * 2;
                c->out = realloc(c->out, c->outCapacity);
            }
            memcpy(c->out + c->outLength, data, (size_t)len);
            c->outLength += (size_t)len;
        }
        if (c->outOffset == c->outLength) { c->outOffset = c->outLength = 0; return; }
        int rc = SSL_write(c->ssl, c->out + c->outOffset, (int)(c->outLength - c->outOffset));
        if (rc > 0) { c->outOffset += (size_t)rc; continue; }
        int e = SSL_get_error(c->ssl, rc);
        if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) return;
        c->dead = 1;
        writeErrors++;
        return;
    }
}

static void readAvailable(conn_t *c) {
    uint8_t buffer[32768];
    for (;;) {
        int n = SSL_read(c->ssl, buffer, sizeof(buffer));
        if (n > 0) {
            if (nghttp2_session_mem_recv(c->session, buffer, (size_t)n) < 0) { c->dead = 1; readErrors++; return; }
            continue;
        }
        int e = SSL_get_error(c->ssl, n);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return;
        c->dead = 1;
        readErrors++;
        return;
    }
}

static int connectTo(conn_t *c, SSL_CTX *ctx, const char *port) {
    struct addrinfo hints = {0}, *ai;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, port, &hints, &ai) != 0) return -1;
    int fd = socket(ai->ai_family, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) { freeaddrinfo(ai); if (fd >= 0) close(fd); return -1; }
    freeaddrinfo(ai);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    SSL *ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    SSL_set_tlsext_host_name(ssl, host);
    if (SSL_connect(ssl) != 1) { SSL_free(ssl); close(fd); return -1; }
    const unsigned char *alpn = NULL;
    unsigned alpnLength = 0;
    SSL_get0_alpn_selected(ssl, &alpn, &alpnLength);
    if (alpnLength != 2 || memcmp(alpn, "h2", 2) != 0) die("the server did not select ALPN h2");
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    c->fd = fd;
    c->ssl = ssl;
    nghttp2_session_callbacks *cb;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_on_header_callback(cb, onHeader);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, onData);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, onClose);
    nghttp2_session_client_new(&c->session, cb, c);
    nghttp2_session_callbacks_del(cb);
    nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 100},
                                         {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20}};
    nghttp2_submit_settings(c->session, NGHTTP2_FLAG_NONE, settings, 2);
    return 0;
}

static int compareU32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static uint32_t percentile(double p) {
    if (latencyCount == 0) return 0;
    size_t i = (size_t)(p * (double)(latencyCount - 1) + 0.5);
    return latencies[i];
}

int main(int argc, char **argv) {
    const char *port = NULL;
    int conns = 16, streams = 4;
    double seconds = 5;
    char *feeds[64];
    int feedCount = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") && v) { host = v; i++; }
        else if (!strcmp(a, "-p") && v) { port = v; i++; }
        else if (!strcmp(a, "-c") && v) { conns = atoi(v); i++; }
        else if (!strcmp(a, "-m") && v) { streams = atoi(v); i++; }
        else if (!strcmp(a, "-d") && v) { seconds = atof(v); i++; }
        else if (!strcmp(a, "--path") && v) { path = v; i++; }
        else if (!strcmp(a, "--method") && v) { method = v; i++; }
        else if (!strcmp(a, "--wrap")) wrapFeed = 1;
        else if (a[0] == '-') die("usage: h2feed -h HOST -p PORT -c CONNS -m STREAMS -d SECONDS --path PATH [--method M] [--wrap] FEED...");
        else if (feedCount < 64) feeds[feedCount++] = argv[i];
    }
    if (!port || feedCount == 0 || conns < 1 || streams < 1 || seconds <= 0) die("missing -p, a feed file, or a bad -c/-m/-d");
    signal(SIGPIPE, SIG_IGN);
    snprintf(authority, sizeof(authority), "%s:%s", host, port);
    loadFeeds(feeds, feedCount);

    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    static const unsigned char alpn[] = {2, 'h', '2'};
    SSL_CTX_set_alpn_protos(ctx, alpn, sizeof(alpn));

    conn_t *cs = calloc((size_t)conns, sizeof(conn_t));
    for (int i = 0; i < conns; i++) {
        if (connectTo(&cs[i], ctx, port) != 0) { connectErrors++; cs[i].dead = 1; }
    }
    struct pollfd *pfds = calloc((size_t)conns, sizeof(struct pollfd));
    uint64_t start = nowMicros();
    deadline = start + (uint64_t)(seconds * 1e6);
    for (;;) {
        uint64_t now = nowMicros();
        if (now >= deadline) break;
        int live = 0;
        for (int i = 0; i < conns; i++) {
            conn_t *c = &cs[i];
            if (c->dead) continue;
            while (!c->dead && c->inflight < streams) submit(c);
            flush(c);
            pfds[i].fd = c->dead ? -1 : c->fd;
            pfds[i].events = POLLIN | (c->outOffset < c->outLength ? POLLOUT : 0);
            pfds[i].revents = 0;
            if (!c->dead) live++;
        }
        if (live == 0) break;
        int timeout = (int)((deadline - now) / 1000) + 1;
        if (poll(pfds, (nfds_t)conns, timeout > 50 ? 50 : timeout) < 0 && errno != EINTR) die("poll failed");
        for (int i = 0; i < conns; i++) {
            conn_t *c = &cs[i];
            if (c->dead || pfds[i].fd < 0) continue;
            if (pfds[i].revents & (POLLIN | POLLERR | POLLHUP)) readAvailable(c);
            if (!c->dead && (pfds[i].revents & POLLOUT)) flush(c);
        }
    }
    uint64_t duration = nowMicros() - start;
    qsort(latencies, latencyCount, sizeof(uint32_t), compareU32);
    double mean = 0;
    uint32_t max = 0;
    for (size_t i = 0; i < latencyCount; i++) { mean += latencies[i]; if (latencies[i] > max) max = latencies[i]; }
    if (latencyCount) mean /= (double)latencyCount;
    size_t used = nextRequest;
    printf("BENCH_JSON {\"requests\":%ld,\"duration_us\":%llu,\"bytes\":%llu,"
           "\"errors\":{\"connect\":%ld,\"read\":%ld,\"write\":%ld,\"status\":%ld,\"timeout\":0},"
           "\"latency_us\":{\"p50\":%u,\"p90\":%u,\"p99\":%u,\"max\":%u,\"mean\":%.1f},"
           "\"used\":[%zu],\"pool\":[%zu],\"ran_out\":%s}\n",
           completed, (unsigned long long)duration, (unsigned long long)bytesReceived, connectErrors, readErrors,
           writeErrors, statusErrors, percentile(0.5), percentile(0.9), percentile(0.99), max, mean, used,
           requestCount, ranOut ? "true" : "false");
    return 0;
}
