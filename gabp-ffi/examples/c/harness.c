/* A test harness in C: connects to a mod (ENDPOINT TOKEN, else the bridge.json it announced), subscribes to
 * `world/stepped`, calls `demo/echo`, steps the world three times and sees three events, and checks that a
 * call past its time limit ends with GABP_STATUS_TIMEOUT. Exits 0 when all of that held.
 * Build: cc harness.c -I ../../include -L <target>/release -lgabp -lpthread
 * Run:   harness tcp://127.0.0.1:PORT TOKEN   (against minimal_mod.c, say) */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gabp.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int stepped = 0;

static void on_event(void *user, const GabpEvent *event) { /* on the subscription's own thread */
    (void)user;
    printf("event %.*s #%llu %.*s\n", (int)event->channel_len, event->channel,
           (unsigned long long)event->seq, (int)event->payload_len, event->payload);
    pthread_mutex_lock(&lock);
    stepped++;
    pthread_mutex_unlock(&lock);
}

static int check(GabpStatus status, GabpStatus expected, const char *what) {
    if (status == expected) return 1;
    fprintf(stderr, "FAIL %s: status %d: %s\n", what, (int)status, gabp_last_error(NULL));
    return 0;
}

static int call(uint64_t bridge, const char *tool, const char *args, uint64_t timeout_ms, GabpStatus expected) {
    GabpString answer = {0};
    GabpStatus status = gabp_bridge_call(bridge, tool, strlen(tool), args, strlen(args), timeout_ms, &answer);
    if (answer.ptr != NULL) printf("%s -> %s\n", tool, answer.ptr);
    gabp_string_free(&answer);
    return check(status, expected, tool);
}

int main(int argc, char **argv) {
    uint64_t bridge = 0, sub = 0;
    GabpStatus connected = argc == 3
        ? gabp_bridge_connect(argv[1], strlen(argv[1]), argv[2], strlen(argv[2]), &bridge)
        : gabp_bridge_discover(NULL, 0, &bridge);
    if (!check(connected, GABP_STATUS_OK, "connect")) return 1;
    int ok = check(gabp_bridge_subscribe(bridge, "world/stepped", 13, on_event, NULL, &sub), GABP_STATUS_OK,
                   "subscribe")
        && call(bridge, "demo/echo", "{\"value\":\"hello from C\"}", 10000, GABP_STATUS_OK)
        && call(bridge, "world/step", "{}", 10000, GABP_STATUS_OK)
        && call(bridge, "world/step", "{}", 10000, GABP_STATUS_OK)
        && call(bridge, "world/step", "{}", 10000, GABP_STATUS_OK)
        && call(bridge, "demo/sleep", "{}", 100, GABP_STATUS_TIMEOUT)   /* it answers after 1.2 s */
        && call(bridge, "no/such", "{}", 10000, GABP_STATUS_REMOTE);
    int seen = 0;
    for (int waited = 0; ok && waited < 1000; waited++) { /* the events follow their calls: up to 10 s */
        pthread_mutex_lock(&lock);
        seen = stepped;
        pthread_mutex_unlock(&lock);
        if (seen >= 3) break;
        usleep(10000);
    }
    if (ok && seen != 3) { fprintf(stderr, "FAIL: %d world/stepped events, expected 3\n", seen); ok = 0; }
    ok = check(gabp_subscription_free(sub), GABP_STATUS_OK, "unsubscribe") && ok;
    ok = check(gabp_bridge_close(bridge), GABP_STATUS_OK, "close") && ok;
    puts(ok ? "harness: all checks passed" : "harness: FAILED");
    return ok ? 0 : 1;
}
