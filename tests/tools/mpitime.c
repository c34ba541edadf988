/* mpitime: an MPI profiling library (the standard's PMPI interface) for
 * the benchmark of issue 47.  Preloaded into the ranks of a model split
 * over MPI (LD_PRELOAD), it times each MPI_Allreduce of float data (the
 * all-reduces of a tensor-parallel layer; rank 0's word to the others is
 * int64 and not counted) and prints, per rank at MPI_Finalize, one line:
 *
 *   mpitime: rank R: N float all-reduces, B bytes, S s
 *
 * Build (MPICH's headers: Debian's libmpich-dev):
 *   mpicc -shared -fPIC -O2 -o mpitime.so tests/tools/mpitime.c
 * and run, e.g.:
 *   mpirun -np 2 -genv LD_PRELOAD $PWD/mpitime.so llm-run -m tp2/model.llm ... */
#include <mpi.h>
#include <stdio.h>
#include <time.h>

static double seconds;
static long calls;
static long long bytes;

static double
now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int
MPI_Allreduce(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
	double t0 = now();
	int rc = PMPI_Allreduce(send, recv, count, type, op, comm);
	if (type == MPI_FLOAT) {
		seconds += now() - t0;
		calls++;
		bytes += (long long)count * (long long)sizeof(float);
	}
	return rc;
}

int
MPI_Finalize(void)
{
	int rank = -1;
	PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
	fprintf(stderr, "mpitime: rank %d: %ld float all-reduces, %lld bytes, %.6f s\n", rank, calls, bytes, seconds);
	return PMPI_Finalize();
}
