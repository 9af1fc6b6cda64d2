-- A small Nsight Systems SQLite export, written by hand in the schema NVIDIA documents for
-- `nsys export --type sqlite` (SQLite Export Schema Reference: StringIds, CUPTI_ACTIVITY_KIND_KERNEL,
-- CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_MEMCPY, NVTX_EVENTS); a subset of the columns.
-- tests/trace/test_trace.cpp loads it into a database at test time. Times in nanoseconds.
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, gridX INTEGER NOT NULL, blockX INTEGER NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
  category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER,
  domainId INTEGER);
INSERT INTO StringIds VALUES
  (1, 'sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1'),
  (2, 'void sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_kernel(...)'),
  (3, 'ncclDevKernel_ReduceScatter_Sum_f16_RING_LL'),
  (4, 'ncclDevKernel_ReduceScatter_Sum_f16_RING_LL(ncclDevKernelArgsStorage<4096ul>)'),
  (5, 'Kernel2'),
  (6, 'void cutlass::Kernel2<cutlass_80_wmma_tensorop_f16_s161616gemm_f16_32x32_128x2_tn_align8>(Params)'),
  (7, 'vectorized_elementwise_kernel'),
  (8, 'void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>(int, float)'),
  (9, 'cudaLaunchKernel_v7000'),
  (10, 'ProfilerStep#1');
-- Device 0: GEMM [1000, 5000), reduce-scatter [4000, 7000), CUTLASS GEMM [6500, 6800) inside it,
-- a copy [7000, 7500), then in the next step an elementwise kernel [8200, 8600).
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES
  (1000, 5000, 0, 1, 7, 1, 100, 2, 1, 132, 384),
  (4000, 7000, 0, 1, 20, 2, 100, 4, 3, 24, 640),
  (6500, 6800, 0, 1, 7, 3, 100, 6, 5, 16, 128),
  (8200, 8600, 0, 1, 7, 4, 100, 8, 7, 1024, 128);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES
  (900, 950, 0, 200, 1, 9, 0),
  (3900, 3950, 0, 200, 2, 9, 0),
  (6400, 6450, 0, 200, 3, 9, 0),
  (8100, 8150, 0, 200, 4, 9, 0);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (7000, 7500, 0, 1, 7, 5, 100, 1048576, 2);
-- Steps: one range with its text inline, one through textId (both forms exist in exports), and a
-- range that is not a step; an instant marker (no end) is skipped.
INSERT INTO NVTX_EVENTS VALUES
  (500, 8000, 59, NULL, NULL, NULL, 'ProfilerStep#0', 200, NULL, NULL, 0),
  (8000, 9000, 59, NULL, NULL, NULL, NULL, 200, NULL, 10, 0),
  (600, 700, 59, NULL, NULL, NULL, 'forward', 200, NULL, NULL, 0),
  (650, NULL, 34, NULL, NULL, NULL, 'ProfilerStep#marker', 200, NULL, NULL, 0);
