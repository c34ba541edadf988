/* Unit tests for lib/compiler/kernels.c: the one table of the kernels a
 * module declares.  Each kernel's declaration, as the emitter writes it,
 * is recognised by llm-lower as its own family's and no other's, and the
 * names are distinct. */
#include "../../lib/compiler/kernels.h"
#include "t.h"

T_TEST(each_declaration_is_its_familys)
{
	for (int k = 0; k < LLM_NKERNEL; k++) {
		char decl[512];
		snprintf(decl, sizeof(decl), "llvm.func @%s%s", llm_kernels[k].name, llm_kernels[k].type);
		/* the first family whose prefix matches, as lower.c looks */
		int f = 0;
		while (f < LLM_NKFAMILY &&
		    strncmp(decl, llm_kernel_families[f].decl, strlen(llm_kernel_families[f].decl)) != 0)
			f++;
		T_CHECKF(f == (int)llm_kernels[k].family, "%s: family %d, not %d", llm_kernels[k].name, f,
		    (int)llm_kernels[k].family);
		T_CHECKF(!strchr(decl, '{'), "%s: a declaration has no body", llm_kernels[k].name);
		T_CHECK(llm_kernel_families[f].form != NULL);
	}
}

T_TEST(names_are_distinct)
{
	for (int i = 0; i < LLM_NKERNEL; i++)
		for (int j = i + 1; j < LLM_NKERNEL; j++)
			T_CHECK(strcmp(llm_kernels[i].name, llm_kernels[j].name) != 0);
}

int
main(void)
{
	T_RUN(each_declaration_is_its_familys);
	T_RUN(names_are_distinct);
	return T_DONE();
}
