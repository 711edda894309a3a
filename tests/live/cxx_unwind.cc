// A C++ exception in flight: thrower(3) -> thrower(2) -> ... -> thrower(0)
// throws; each level holds a Guard. The first destructor run by the
// unwinder (thrower(0)'s Guard, from thrower(0)'s landing pad) finds
// std::uncaught_exceptions() == 1 and blocks in nested noinline calls:
//   pause <- block_in_dtor <- on_unwind <- Guard::~Guard <- thrower(0)
//   [landing pad] <- thrower(1) <- thrower(2) <- thrower(3) <- run <- main
// A second thread does the same with a std::string-carrying exception
// caught further down, to have a landing pad in another function.
#include <atomic>
#include <cstdio>
#include <exception>
#include <pthread.h>
#include <stdexcept>
#include <string>
#include <unistd.h>

#include "live.h"

static std::atomic<int> blocked{0};

NOINLINE static void block_in_dtor()
{
	if (std::uncaught_exceptions() != 1)
		live_die("no exception in flight");
	if (blocked.fetch_add(1) == 1)
		live_ready();
	for (;;)
		pause();
}

NOINLINE static void on_unwind(int id)
{
	if (id == 0)
		block_in_dtor();
	KEEP();
}

struct Guard {
	int id;
	explicit Guard(int i) : id(i) {}
	NOINLINE ~Guard() { on_unwind(id); }
};

NOINLINE static void thrower(int depth)
{
	Guard g(depth);
	if (depth == 0)
		throw std::runtime_error("in flight");
	thrower(depth - 1);
	KEEP();
}

NOINLINE static int run()
{
	try {
		thrower(3);
	} catch (const std::exception &) {
		return 1;
	}
	return 0;
}

struct Holder {
	std::string what;
	NOINLINE ~Holder() { on_unwind(what.empty() ? 1 : 0); }
};

NOINLINE static void deep_throw(int n)
{
	if (n == 0)
		throw std::string("thread exception");
	deep_throw(n - 1);
	KEEP();
}

NOINLINE static void with_holder()
{
	Holder h{ "held" };
	deep_throw(2);
	KEEP();
}

static void *thread_main(void *)
{
	pthread_setname_np(pthread_self(), "cxx-thread");
	try {
		with_holder();
	} catch (const std::string &) {
	}
	return nullptr;
}

int main()
{
	pthread_t t;
	if (pthread_create(&t, nullptr, thread_main, nullptr) != 0)
		live_die("pthread_create");
	while (blocked.load() < 1)
		usleep(1000);
	return run();
}
