#ifndef ATTEST_GATEWAY_CEPOLL_SHIM_H
#define ATTEST_GATEWAY_CEPOLL_SHIM_H
/* Linux epoll (not part of Swift's Glibc module): GatewayHTTP's EventLoopPoller; and reuseport steering. */
#include <sys/epoll.h>
#include <sys/eventfd.h>

/* SO_REUSEPORT groups (GatewayIO's Socket, for the listeners' handover): a one-instruction classic
   BPF program (`struct sock_filter`, `struct sock_fprog`) attached to a listener's reuseport group
   picks the socket at `index` (in the order the sockets joined the group) for every new connection;
   an index past the group's end makes the kernel fall back to its hash (reuseport_select_sock,
   net/core/sock_reuseport.c). Only the BPF types and the option numbers come from here: setsockopt
   itself is Glibc's (including <sys/socket.h> here would make this module own the socket
   declarations, hiding them from files that import only Glibc). */
#include <linux/filter.h>
#define ATTEST_SO_ATTACH_REUSEPORT_CBPF 51
#define ATTEST_SO_DETACH_REUSEPORT_BPF 68
#define ATTEST_BPF_RET_K (BPF_RET | BPF_K)

/* accept4(2) (GatewayIO's Socket.accept: the accepted descriptor non-blocking and close-on-exec in
   one call): <sys/socket.h> declares it only under _GNU_SOURCE, which Swift's Glibc module is not
   built with. Declared here with a forward-declared `struct sockaddr` (Swift unifies it with Glibc's) instead of
   including the header, for the reason given above. */
struct sockaddr;
extern int accept4(int fd, struct sockaddr *address, unsigned int *length, int flags);
#endif
