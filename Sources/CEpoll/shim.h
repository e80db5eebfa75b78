#ifndef ATTEST_GATEWAY_CEPOLL_SHIM_H
#define ATTEST_GATEWAY_CEPOLL_SHIM_H
/* Linux epoll (not part of Swift's Glibc module): GatewayHTTP's EventLoopPoller; and reuseport steering. */
#include <sys/epoll.h>
#include <sys/eventfd.h>

/* SO_REUSEPORT groups (GatewayIO's Socket, for the listeners' handover): a one-instruction classic
   BPF program attached to a listener's reuseport group picks the socket at `index` (in the order the
   sockets joined the group) for every new connection; an index past the group's end makes the
   kernel fall back to its hash (reuseport_select_sock, net/core/sock_reuseport.c). */
#include <sys/socket.h>
#include <linux/filter.h>
#ifndef SO_ATTACH_REUSEPORT_CBPF
#define SO_ATTACH_REUSEPORT_CBPF 51
#endif
#ifndef SO_DETACH_REUSEPORT_BPF
#define SO_DETACH_REUSEPORT_BPF 68
#endif

static inline int attest_reuseport_steer(int fd, unsigned int index) {
    struct sock_filter code[1] = { { BPF_RET | BPF_K, 0, 0, index } };
    struct sock_fprog program = { 1, code };
    return setsockopt(fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &program, sizeof program);
}

static inline int attest_reuseport_detach(int fd) {
    int unused = 0;
    return setsockopt(fd, SOL_SOCKET, SO_DETACH_REUSEPORT_BPF, &unused, sizeof unused);
}
#endif
